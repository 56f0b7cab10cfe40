//! Adam, and a ZeRO-1 wrapper around it: each rank keeps the moments of one
//! contiguous shard of the parameters only.

use dist_runtime::prelude::*;

use crate::data::{block_counts, offsets};
use crate::model::clip_factor;

/// Adam's hyper-parameters.
#[derive(Clone, Copy, Debug)]
pub struct Adam {
    pub lr: f64,
    pub beta1: f64,
    pub beta2: f64,
    pub eps: f64,
}

impl Adam {
    pub fn new(lr: f64) -> Self {
        Adam { lr, beta1: 0.9, beta2: 0.999, eps: 1e-8 }
    }

    /// Optimizer state for `len` parameters.
    pub fn for_shard(self, len: usize) -> AdamState {
        AdamState { hp: self, m: vec![0.0; len], v: vec![0.0; len], t: 0 }
    }
}

pub struct AdamState {
    hp: Adam,
    m: Vec<f64>,
    v: Vec<f64>,
    t: i32,
}

impl AdamState {
    pub fn update(&mut self, params: &mut [f64], grad: &[f64]) {
        assert_eq!(params.len(), self.m.len());
        self.t += 1;
        let Adam { lr, beta1, beta2, eps } = self.hp;
        let (c1, c2) = (1.0 - beta1.powi(self.t), 1.0 - beta2.powi(self.t));
        for (((p, g), m), v) in params.iter_mut().zip(grad).zip(&mut self.m).zip(&mut self.v) {
            *m = beta1 * *m + (1.0 - beta1) * g;
            *v = beta2 * *v + (1.0 - beta2) * g * g;
            *p -= lr * (*m / c1) / ((*v / c2).sqrt() + eps);
        }
    }
}

/// ZeRO stage 1: gradients are reduce-scattered so that each rank receives the
/// summed gradient of its own shard, updates that shard with its own Adam state,
/// and the updated shards are all-gathered back into every replica.
pub struct ZeroOptimizer {
    comm: Comm<World>,
    counts: Vec<usize>,
    start: usize,
    state: AdamState,
    max_norm: f64,
}

impl ZeroOptimizer {
    pub fn new(comm: &Comm<World>, num_params: usize, adam: Adam, max_norm: f64) -> Self {
        let counts = block_counts(num_params, comm.size());
        let start = offsets(&counts)[comm.rank()];
        let state = adam.for_shard(counts[comm.rank()]);
        ZeroOptimizer { comm: comm.clone(), counts, start, state, max_norm }
    }

    pub fn shard_range(&self) -> std::ops::Range<usize> {
        self.start..self.start + self.counts[self.comm.rank()]
    }

    /// One optimizer step. `grads` is this rank's local (unreduced) gradient of every
    /// parameter; on return `params` holds the updated parameters on every rank.
    pub fn step(&mut self, params: &mut [f64], grads: &[f64]) -> dist_runtime::Result<()> {
        let range = self.shard_range();
        let mut g = vec![0.0; range.len()];
        self.comm.reduce_scatter_v(grads, &mut g, &self.counts, ReduceOp::Sum)?;

        // Global gradient norm for clipping: each rank contributes its shard.
        let mut sq = [g.iter().map(|x| x * x).sum::<f64>()];
        self.comm.all_reduce(&mut sq, ReduceOp::Sum)?;
        let f = clip_factor(sq[0].sqrt(), self.max_norm);
        g.iter_mut().for_each(|x| *x *= f);

        let mut shard = params[range].to_vec();
        self.state.update(&mut shard, &g);
        self.comm.all_gather_v(&shard, params, &self.counts)?;
        Ok(())
    }
}
