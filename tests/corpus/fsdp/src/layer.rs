//! One FSDP unit: a dense layer whose flat parameters are sharded over the ranks.

use dist_runtime::prelude::*;

use crate::flat;

pub struct ShardedLayer {
    pub fan_in: usize,
    pub fan_out: usize,
    /// Unpadded parameter count.
    pub numel: usize,
    /// This rank's slice of the padded flat parameters, its gradient and momentum.
    pub shard: Vec<f64>,
    pub grad: Vec<f64>,
    momentum: Vec<f64>,
}

impl ShardedLayer {
    /// Keep this rank's slice of `full` (the same unsharded parameters on every rank).
    pub fn from_full(full: &[f64], fan_in: usize, fan_out: usize, comm: &Comm<World>) -> Self {
        let numel = full.len();
        let owned = flat::owned_range(numel, comm.size(), comm.rank());
        let mut shard = vec![0.0; flat::shard_len(numel, comm.size())];
        shard[..owned.len()].copy_from_slice(&full[owned]);
        let len = shard.len();
        ShardedLayer { fan_in, fan_out, numel, shard, grad: vec![0.0; len], momentum: vec![0.0; len] }
    }

    /// All-gather the full (unpadded) parameters.
    pub fn unshard(&self, comm: &Comm<World>) -> dist_runtime::Result<Vec<f64>> {
        let mut full = vec![0.0; self.shard.len() * comm.size()];
        comm.all_gather(&self.shard, &mut full)?;
        full.truncate(self.numel);
        Ok(full)
    }

    /// `scale` × the sum of every rank's full-size gradient; this rank keeps its slice.
    pub fn reduce_grad(&mut self, comm: &Comm<World>, full_grad: Vec<f64>, scale: f64) -> dist_runtime::Result<()> {
        let padded = flat::pad(full_grad, comm.size());
        comm.reduce_scatter(&padded, &mut self.grad, ReduceOp::PreMulSum(scale))?;
        Ok(())
    }

    pub fn step(&mut self, lr: f64, beta: f64) {
        crate::dense::sgd_momentum(&mut self.shard, &self.grad, &mut self.momentum, lr, beta);
    }

    pub fn grad_sq(&self) -> f64 {
        self.grad.iter().map(|g| g * g).sum()
    }
}
