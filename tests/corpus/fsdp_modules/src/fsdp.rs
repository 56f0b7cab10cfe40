//! A fully sharded wrapper around one module: each rank keeps 1/n of its flat
//! parameters (padded to a multiple of n), gathers them whole for forward and for
//! backward, and reduce-scatters the gradient back to the owners.

use dist_runtime::prelude::*;

use crate::model::Module;
use crate::optim::Momentum;

pub struct FullyShardedModule<M: Module> {
    pub inner: M,
    comm: Comm<World>,
    numel: usize,
    padded: usize,
    /// This rank's slice of the padded flat parameters.
    pub shard: Vec<f64>,
    /// Accumulated gradient of `shard`.
    pub grad: Vec<f64>,
    opt: Momentum,
}

impl<M: Module> FullyShardedModule<M> {
    /// Wraps `inner`, keeping this rank's shard of `full` (the same on every rank).
    pub fn new(inner: M, full: &[f64], comm: &Comm<World>, lr: f64, beta: f64) -> Self {
        let n = comm.size();
        let numel = inner.num_params();
        assert_eq!(full.len(), numel);
        let padded = numel.div_ceil(n) * n;
        let per = padded / n;
        let mut flat = full.to_vec();
        flat.resize(padded, 0.0);
        let r = comm.rank();
        let shard = flat[r * per..(r + 1) * per].to_vec();
        FullyShardedModule {
            inner,
            comm: comm.clone(),
            numel,
            padded,
            grad: vec![0.0; per],
            shard,
            opt: Momentum::new(per, lr, beta),
        }
    }

    /// All ranks' shards put together: the full (unpadded) parameters.
    pub fn gather_params(&self) -> dist_runtime::Result<Vec<f64>> {
        let mut full = vec![0.0; self.padded];
        self.comm.all_gather(&self.shard, &mut full)?;
        full.truncate(self.numel);
        Ok(full)
    }

    pub fn forward(&self, x: &[f64], rows: usize) -> dist_runtime::Result<Vec<f64>> {
        let params = self.gather_params()?;
        Ok(self.inner.forward(&params, x, rows))
    }

    /// Backward for this rank's rows; the parameter gradient is summed over every rank
    /// and this rank's part added to `grad`. Returns the input gradient.
    pub fn backward(&mut self, x: &[f64], y: &[f64], dy: &[f64], rows: usize) -> dist_runtime::Result<Vec<f64>> {
        let params = self.gather_params()?;
        let (dx, mut dp) = self.inner.backward(&params, x, y, dy, rows);
        dp.resize(self.padded, 0.0);
        let mut mine = vec![0.0; self.shard.len()];
        self.comm.reduce_scatter(&dp, &mut mine, ReduceOp::Sum)?;
        self.grad.iter_mut().zip(&mine).for_each(|(g, d)| *g += d);
        Ok(dx)
    }

    pub fn grad_sq_norm(&self) -> f64 {
        self.grad.iter().map(|g| g * g).sum()
    }

    pub fn scale_grad(&mut self, f: f64) {
        self.grad.iter_mut().for_each(|g| *g *= f);
    }

    pub fn step(&mut self) {
        self.opt.step(&mut self.shard, &self.grad);
        self.grad.iter_mut().for_each(|g| *g = 0.0);
    }
}
