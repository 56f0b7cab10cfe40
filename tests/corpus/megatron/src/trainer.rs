//! The per-rank trainer: this rank's slice of the model (its stage's layers, its tp rows
//! of each) beside the process groups, stepped with a GPipe schedule.

use dist_runtime::prelude::*;

use crate::config::Config;
use crate::model::{self, History, D, LAYERS};
use crate::parallel::{self, ParallelState};

/// Rows `rows.0..rows.1` of layer `index`'s weight matrix.
struct LayerShard {
    index: usize,
    rows: (usize, usize),
    w: Vec<f32>,
}

pub struct Trainer {
    ps: ParallelState,
    cfg: Config,
    layers: Vec<LayerShard>,
    losses: Vec<f32>,
    grad_norms: Vec<f32>,
}

impl Trainer {
    pub fn new(world: &Comm<World>, cfg: Config) -> dist_runtime::Result<Trainer> {
        let ps = ParallelState::new(world, cfg.tp, cfg.pp)?;
        let (l0, l1) = model::shard(LAYERS, cfg.pp, ps.stage());
        let rows = model::shard(D, cfg.tp, ps.tp.rank());
        let layers = (l0..l1)
            .map(|index| {
                let full = model::init_layer(index);
                LayerShard { index, rows, w: full[rows.0 * D..rows.1 * D].to_vec() }
            })
            .collect();
        Ok(Trainer { ps, cfg, layers, losses: Vec::new(), grad_norms: Vec::new() })
    }

    fn replica(&self) -> usize {
        self.ps.dp.rank()
    }

    /// One micro-batch through this stage; returns the stage's input and every layer's
    /// output.
    fn forward(&self, step: usize, m: usize) -> dist_runtime::Result<Vec<Vec<f32>>> {
        let rows = self.cfg.rows;
        let input = if self.ps.is_first_stage() {
            model::micro_batch(&self.cfg, step, self.replica(), m).0
        } else {
            let mut buf = vec![0.0; rows * D];
            self.ps.recv_activation(&mut buf)?;
            buf
        };
        let mut acts = vec![input];
        for layer in &self.layers {
            let mut y = model::partial_forward(acts.last().unwrap(), &layer.w, layer.rows, rows);
            parallel::tp_sum_partials(&self.ps.tp, &mut y)?;
            acts.push(y);
        }
        self.ps.send_activation(acts.last().unwrap())?;
        Ok(acts)
    }

    /// Back through this stage for one micro-batch, adding into `grads`; returns the
    /// micro-batch's loss on the last stage (0 elsewhere).
    fn backward(&self, step: usize, m: usize, acts: &[Vec<f32>], grads: &mut [Vec<f32>]) -> dist_runtime::Result<f32> {
        let rows = self.cfg.rows;
        let mut loss = 0.0;
        let mut dy = if self.ps.is_last_stage() {
            let target = model::micro_batch(&self.cfg, step, self.replica(), m).1;
            let scale = (rows * self.cfg.micro_batches) as f32;
            let (l, d) = model::mse(acts.last().unwrap(), &target, scale);
            loss = l;
            d
        } else {
            let mut buf = vec![0.0; rows * D];
            self.ps.recv_grad(&mut buf)?;
            buf
        };
        for (i, layer) in self.layers.iter().enumerate().rev() {
            let (dw, mut dx) = model::partial_backward(&acts[i], &dy, &layer.w, layer.rows, rows);
            grads[i].iter_mut().zip(&dw).for_each(|(g, d)| *g += d);
            parallel::tp_sum_partials(&self.ps.tp, &mut dx)?;
            dy = dx;
        }
        self.ps.send_grad(&dy)?;
        Ok(loss)
    }

    pub fn train_step(&mut self, step: usize) -> dist_runtime::Result<f32> {
        let mut grads: Vec<Vec<f32>> = self.layers.iter().map(|l| vec![0.0; l.w.len()]).collect();
        let saved = (0..self.cfg.micro_batches).map(|m| self.forward(step, m)).collect::<dist_runtime::Result<Vec<_>>>()?;
        let mut local_loss = 0.0;
        for m in (0..self.cfg.micro_batches).rev() {
            local_loss += self.backward(step, m, &saved[m], &mut grads)?;
        }
        parallel::dp_average(&self.ps.dp, &mut grads)?;
        let norm = parallel::global_grad_norm(&self.ps, &grads)?;
        for (layer, g) in self.layers.iter_mut().zip(&grads) {
            layer.w.iter_mut().zip(g).for_each(|(w, g)| *w -= self.cfg.lr * g);
        }
        let loss = parallel::share_loss(&self.ps, local_loss)?;
        self.losses.push(loss);
        self.grad_norms.push(norm);
        Ok(loss)
    }

    /// Largest relative difference of this rank's weights, losses and gradient norms
    /// from the serial run.
    pub fn compare(&self, want: &History) -> f32 {
        let weights = self
            .layers
            .iter()
            .map(|l| model::max_rel_diff(&l.w, &want.weights[l.index][l.rows.0 * D..l.rows.1 * D]))
            .fold(0.0, f32::max);
        weights
            .max(model::max_rel_diff(&self.losses, &want.losses))
            .max(model::max_rel_diff(&self.grad_norms, &want.grad_norms))
    }

    pub fn layout(&self) -> String {
        format!("pp={} dp={} tp={}", self.ps.pp.size(), self.ps.dp.size(), self.ps.tp.size())
    }
}
