//! The trainer on a (dp × cp) mesh: the sequence split over cp, keys and values around
//! the cp ring, gradients reduce-scattered over cp (each cp rank updates a shard of the
//! parameters), averaged over dp, clipped by the global norm, and all-gathered back.

use crate::config::{block, Config};
use crate::model::{self, fold_sum, n_params};
use dist_runtime::prelude::*;
use std::ops::Range;

dist_runtime::group!(pub(crate) Dp);
dist_runtime::group!(pub(crate) Cp);

/// A key/value block on its way around the ring: [K (padded), V (padded)].
const KV: Tag<f64> = Tag::new(1);
/// The last position's prediction, to cp rank 0 for the log.
const PRED: Tag<f64> = Tag::new(2);

pub struct Trainer {
    pub dp: Comm<Dp>,
    pub cp: Comm<Cp>,
    cfg: Config,
    pub params: Vec<f64>,
    /// Positions of the sequence on this rank, and the parameters it updates.
    seq: Range<usize>,
    shard: Range<usize>,
    best: f64,
    bad_evals: usize,
    pub last_pred: Vec<f64>,
}

impl Trainer {
    pub fn new(world: &Comm<World>, cfg: Config) -> dist_runtime::Result<Trainer> {
        let (dp_size, cp_size) = cfg.mesh_shape(world.size());
        let (dp, cp) = world.mesh2::<Dp, Cp>(dp_size, cp_size)?;
        let seq = block(cfg.seq, cp.size(), cp.rank());
        let shard = block(n_params(cfg.dim), cp.size(), cp.rank());
        let mut params = model::init_params(cfg.dim, cfg.seed, 0.3);
        dp.broadcast(&mut params, 0)?; // every replica starts from replica 0's weights
        Ok(Trainer { last_pred: vec![0.0; cfg.dim], dp, cp, cfg, params, seq, shard, best: f64::INFINITY, bad_evals: 0 })
    }

    fn rows<'a>(&self, m: &'a [f64]) -> &'a [f64] {
        &m[self.seq.start * self.cfg.dim..self.seq.end * self.cfg.dim]
    }

    /// S for the whole sequence: keys and values go around the ring, added in block order.
    fn ring_context(&mut self, x: &[f64]) -> dist_runtime::Result<Vec<f64>> {
        let (c, j, d, l) = (self.cp.size(), self.cp.rank(), self.cfg.dim, self.cfg.seq);
        let most = (0..c).map(|o| block(l, c, o).len()).max().unwrap_or(0);
        let (xs, rows) = (self.rows(x), self.seq.len());
        let mut blk = vec![0.0; 2 * most * d];
        blk[..rows * d].copy_from_slice(&model::matmul(xs, &self.params[d * d..2 * d * d], rows, d, d));
        blk[most * d..most * d + rows * d].copy_from_slice(&model::matmul(xs, &self.params[2 * d * d..], rows, d, d));
        let (next, prev) = ((j + 1) % c, (j + c - 1) % c);
        let mut partials = vec![Vec::new(); c];
        for step in 0..c {
            // After `step` shifts the block in hand started on rank j - step.
            let owner = (j + c - step) % c;
            let len = block(l, c, owner).len();
            partials[owner] = model::matmul_tn(&blk[..len * d], &blk[most * d..most * d + len * d], len, d, d);
            if step + 1 < c {
                let mut incoming = vec![0.0; blk.len()];
                self.cp.sendrecv(next, KV, &blk, prev, &mut incoming)?;
                blk = incoming;
            }
        }
        Ok(fold_sum(&partials, d * d).iter().map(|z| z / l as f64).collect())
    }

    /// The global gradient norm over both mesh dimensions; scales the shard in place.
    fn clip(&self, shard_grad: &mut [f64]) -> dist_runtime::Result<f64> {
        let mut sq = [shard_grad.iter().map(|g| g * g).sum::<f64>()];
        self.cp.all_reduce(&mut sq, ReduceOp::Sum)?;
        self.dp.all_reduce(&mut sq, ReduceOp::Max)?;
        let norm = sq[0].sqrt();
        if norm > self.cfg.clip {
            shard_grad.iter_mut().for_each(|g| *g *= self.cfg.clip / norm);
        }
        Ok(norm)
    }

    /// One optimiser step on replica `dp.rank()`'s sequence: (mean loss, gradient norm).
    pub fn step(&mut self, step: usize) -> dist_runtime::Result<(f64, f64)> {
        let (c, d, l) = (self.cp.size(), self.cfg.dim, self.cfg.seq);
        let (x, y) = model::sequence(self.cfg.seed, step as u64, self.dp.rank(), l, d);
        let s = self.ring_context(&x)?;
        let rows = self.seq.len();
        let (sse, g, q) = model::block_forward(&self.params, self.rows(&x), self.rows(&y), &s, rows, d, l);
        let mut big_g = model::matmul_tn(&q, &g, rows, d, d);
        self.cp.all_reduce(&mut big_g, ReduceOp::Sum)?;
        let grad = model::weight_grads(&self.params, self.rows(&x), &g, &s, &big_g, rows, d, l);

        // Sum over cp into this rank's shard, average the shard over the replicas.
        let counts: Vec<usize> = (0..c).map(|o| block(grad.len(), c, o).len()).collect();
        let mut shard_grad = vec![0.0; self.shard.len()];
        self.cp.reduce_scatter_v(&grad, &mut shard_grad, &counts, ReduceOp::Sum)?;
        self.dp.all_reduce(&mut shard_grad, ReduceOp::Avg)?;
        let norm = self.clip(&mut shard_grad)?;
        let lr = self.cfg.lr;
        let shard: Vec<f64> = self.params[self.shard.clone()].iter().zip(&shard_grad).map(|(p, g)| p - lr * g).collect();
        self.cp.all_gather_v(&shard, &mut self.params, &counts)?;

        let mut loss = [sse];
        self.cp.all_reduce(&mut loss, ReduceOp::Sum)?;
        self.dp.all_reduce(&mut loss, ReduceOp::Avg)?;
        Ok((loss[0] / (l * d) as f64, norm))
    }

    /// Validation loss per replica: (this rank's rows, for the log; the whole sequence
    /// averaged over the replicas). The last position's prediction goes to cp rank 0.
    pub fn validate(&mut self) -> dist_runtime::Result<(f64, f64)> {
        let (d, l) = (self.cfg.dim, self.cfg.seq);
        let (x, y) = model::sequence(self.cfg.seed ^ 0xFEED, 0, self.dp.rank(), l, d);
        let s = self.ring_context(&x)?;
        let rows = self.seq.len();
        let (sse, _, q) = model::block_forward(&self.params, self.rows(&x), self.rows(&y), &s, rows, d, l);
        let last = self.cp.size() - 1;
        if self.cp.rank() == last && rows > 0 {
            self.last_pred = model::matmul(&q[(rows - 1) * d..], &s, 1, d, d);
        }
        if last > 0 {
            if self.cp.rank() == last {
                self.cp.send(0, PRED, &self.last_pred)?;
            } else if self.cp.rank() == 0 {
                self.cp.recv(last, PRED, &mut self.last_pred)?;
            }
        }
        let mut v = [sse];
        self.cp.all_reduce(&mut v, ReduceOp::Sum)?;
        self.dp.all_reduce(&mut v, ReduceOp::Avg)?;
        Ok((sse / (rows.max(1) * d) as f64, v[0] / (l * d) as f64))
    }

    pub fn should_stop(&mut self, val: f64) -> bool {
        if val < self.best - self.cfg.min_delta {
            (self.best, self.bad_evals) = (val, 0);
        } else {
            self.bad_evals += 1;
        }
        self.bad_evals >= self.cfg.patience
    }
}
