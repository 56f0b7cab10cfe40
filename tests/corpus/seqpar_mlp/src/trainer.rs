//! Sequence-parallel + tensor-parallel training of one MLP shard.

use dist_runtime::prelude::*;

use crate::config::{init_model, replica_data, shard, Config};
use crate::model::Model;
use crate::parallel::ParallelState;

pub struct Trainer {
    cfg: Config,
    ps: ParallelState,
    model: Model,
    /// This rank's slice of the sequence (rows_per rows, zero rows past the end).
    x_local: Vec<f64>,
    t_local: Vec<f64>,
    rows_per: usize,
    valid: usize,
    pub losses: Vec<f64>,
}

impl Trainer {
    /// tp rank 0 of each replica loads the batch and broadcasts it over tp (as
    /// Megatron's data loader does); each rank keeps its sequence slice.
    pub fn new(cfg: Config, ps: ParallelState) -> dist_runtime::Result<Trainer> {
        let (tp, t, h, seq) = (ps.tp.size(), ps.tp.rank(), cfg.hidden, cfg.seq);
        let mut batch = vec![0.0; 2 * seq * h];
        if t == 0 {
            let (x, target) = replica_data(&cfg, ps.dp.rank());
            batch[..seq * h].copy_from_slice(&x);
            batch[seq * h..].copy_from_slice(&target);
        }
        ps.tp.broadcast(&mut batch, 0)?;
        let (x, target) = batch.split_at(seq * h);

        let rows_per = seq.div_ceil(tp);
        let start = (t * rows_per).min(seq);
        let end = (start + rows_per).min(seq);
        let mut x_local = vec![0.0; rows_per * h];
        let mut t_local = vec![0.0; rows_per * h];
        x_local[..(end - start) * h].copy_from_slice(&x[start * h..end * h]);
        t_local[..(end - start) * h].copy_from_slice(&target[start * h..end * h]);
        let model = Model::shard_of(&init_model(&cfg), shard(cfg.ffn, tp, t));
        Ok(Trainer { cfg, ps, model, x_local, t_local, rows_per, valid: end - start, losses: Vec::new() })
    }

    /// One forward/backward/SGD step; returns the loss averaged over replicas.
    pub fn step(&mut self) -> dist_runtime::Result<f64> {
        let h = self.cfg.hidden;
        let m = self.rows_per * self.ps.tp.size();
        let seq = self.cfg.seq as f64;

        // Sequence-parallel region -> tensor-parallel region: gather the whole sequence.
        let mut x_full = vec![0.0; m * h];
        self.ps.tp.all_gather(&self.x_local, &mut x_full)?;
        let act = self.model.hidden_act(&x_full, m);
        let partial = self.model.partial_out(&act, m);
        // Back to sequence-parallel: sum the shards' partial outputs, keep our rows.
        let mut y = vec![0.0; self.rows_per * h];
        self.ps.tp.reduce_scatter(&partial, &mut y, ReduceOp::Sum)?;
        self.model.add_bias(&mut y);

        let diff: Vec<f64> =
            (0..self.rows_per * h).map(|i| if i / h < self.valid { y[i] - self.t_local[i] } else { 0.0 }).collect();
        let mut loss = [diff.iter().map(|d| d * d).sum::<f64>() / (2.0 * seq)];
        let dy_local: Vec<f64> = diff.iter().map(|d| d / seq).collect();
        let mut dy = vec![0.0; m * h];
        self.ps.tp.all_gather(&dy_local, &mut dy)?;
        let mut grads = self.model.backward(&x_full, &act, &dy, m);

        // b2 lives in the sequence-parallel region: each tp rank saw only its rows.
        let mut b2 = self.model.bias_grad(&dy_local);
        self.ps.tp.all_reduce(&mut b2, ReduceOp::Sum)?;
        grads.insert("b2", b2);
        // Data parallel: average every gradient and the loss over replicas.
        self.ps.all_reduce_grads(&mut grads)?;
        self.ps.tp.all_reduce(&mut loss, ReduceOp::Sum)?;
        self.ps.dp.all_reduce(&mut loss, ReduceOp::Avg)?;
        self.model.sgd(&grads, self.cfg.lr);
        self.losses.push(loss[0]);
        Ok(loss[0])
    }

    pub fn train(&mut self) -> dist_runtime::Result<()> {
        for _ in 0..self.cfg.steps {
            self.step()?;
        }
        Ok(())
    }

    /// The full W1ᵀ and W2 on tp rank 0 of each replica, `None` elsewhere.
    pub fn gather_weights(&self) -> dist_runtime::Result<Option<(Vec<f64>, Vec<f64>)>> {
        let (tp, h, f) = (self.ps.tp.size(), self.cfg.hidden, self.cfg.ffn);
        let counts: Vec<usize> = (0..tp).map(|i| shard(f, tp, i)).map(|(a, b)| (b - a) * h).collect();
        if self.ps.tp.rank() != 0 {
            self.ps.tp.gather_v(&self.model.w1t, None, &counts, 0)?;
            self.ps.tp.gather_v(&self.model.w2, None, &counts, 0)?;
            return Ok(None);
        }
        let (mut w1t, mut w2) = (vec![0.0; f * h], vec![0.0; f * h]);
        self.ps.tp.gather_v(&self.model.w1t, Some(&mut w1t[..]), &counts, 0)?;
        self.ps.tp.gather_v(&self.model.w2, Some(&mut w2[..]), &counts, 0)?;
        Ok(Some((w1t, w2)))
    }

    /// b2 is replicated: every tp rank holds all of it.
    pub fn output_bias(&self) -> &[f64] {
        &self.model.b2
    }

    pub fn mesh(&self) -> String {
        self.ps.describe()
    }

    pub fn replicas(&self) -> usize {
        self.ps.dp.size()
    }

    pub fn is_world_root(&self) -> bool {
        self.ps.world.rank() == 0
    }
}
