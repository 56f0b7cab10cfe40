//! The sharded model and its training step.

use dist_runtime::prelude::*;

use crate::dense;
use crate::layer::ShardedLayer;

pub struct FsdpModel {
    comm: Comm<World>,
    layers: Vec<ShardedLayer>,
    lr: f64,
    beta: f64,
    /// Rows of the global batch (the loss is a mean over all of them).
    global_rows: usize,
}

#[derive(Default)]
pub struct FsdpModelBuilder {
    dims: Vec<usize>,
    lr: Option<f64>,
    beta: Option<f64>,
}

impl FsdpModelBuilder {
    pub fn input(mut self, width: usize) -> Self {
        self.dims = vec![width];
        self
    }
    pub fn layer(mut self, width: usize) -> Self {
        self.dims.push(width);
        self
    }
    pub fn lr(mut self, lr: f64) -> Self {
        self.lr = Some(lr);
        self
    }
    pub fn momentum(mut self, beta: f64) -> Self {
        self.beta = Some(beta);
        self
    }
    pub fn build(self, comm: Comm<World>, global_rows: usize) -> FsdpModel {
        assert!(self.dims.len() >= 2, "a model needs an input width and at least one layer");
        let layers = self
            .dims
            .windows(2)
            .enumerate()
            .map(|(l, d)| ShardedLayer::from_full(&dense::init_params(d[0], d[1], l as u64 + 1), d[0], d[1], &comm))
            .collect();
        FsdpModel { comm, layers, lr: self.lr.unwrap_or(0.05), beta: self.beta.unwrap_or(0.9), global_rows }
    }
}

pub struct StepStats {
    pub loss: f64,
    pub grad_norm: f64,
}

impl FsdpModel {
    pub fn builder() -> FsdpModelBuilder {
        FsdpModelBuilder::default()
    }

    pub fn dims(&self) -> Vec<usize> {
        let mut d = vec![self.layers[0].fan_in];
        d.extend(self.layers.iter().map(|l| l.fan_out));
        d
    }

    /// Forward and backward on this rank's rows `x` (targets `t`), gradients reduced to
    /// their owners, then the optimizer on each shard.
    pub fn train_step(&mut self, x: &[f64], t: &[f64]) -> dist_runtime::Result<StepStats> {
        let rows = t.len();
        let nl = self.layers.len();
        let mut acts = vec![x.to_vec()];
        for (l, layer) in self.layers.iter().enumerate() {
            let full = layer.unshard(&self.comm)?;
            let h = dense::forward(&acts[l], &full, layer.fan_in, layer.fan_out, rows, l + 1 == nl);
            acts.push(h);
        }
        let pred = &acts[nl];
        let local_loss: f64 = pred.iter().zip(t).map(|(p, t)| (p - t) * (p - t)).sum::<f64>() / self.global_rows as f64;
        // Gradients of this rank's summed loss; the 1/rows of the mean is applied as the
        // shards are reduced.
        let mut dy: Vec<f64> = pred.iter().zip(t).map(|(p, t)| 2.0 * (p - t)).collect();
        let scale = 1.0 / self.global_rows as f64;

        for l in (0..nl).rev() {
            let layer = &self.layers[l];
            let full = layer.unshard(&self.comm)?;
            let (grad, dx) = dense::backward(&acts[l], &acts[l + 1], &full, &dy, layer.fan_in, layer.fan_out, rows, l + 1 == nl);
            self.layers[l].reduce_grad(&self.comm, grad, scale)?;
            dy = dx;
        }

        let mut loss = [local_loss];
        self.comm.all_reduce(&mut loss, ReduceOp::Sum)?;
        let grad_norm = self.grad_norm()?;
        for layer in &mut self.layers {
            layer.step(self.lr, self.beta);
        }
        Ok(StepStats { loss: loss[0], grad_norm })
    }

    fn grad_norm(&self) -> dist_runtime::Result<f64> {
        let mut sq = [self.layers.iter().map(ShardedLayer::grad_sq).sum::<f64>()];
        self.comm.all_reduce(&mut sq, ReduceOp::Sum)?;
        Ok(sq[0].sqrt())
    }

    /// The full parameters of every layer (a consolidated checkpoint), on every rank.
    pub fn full_state(&self) -> dist_runtime::Result<Vec<Vec<f64>>> {
        self.layers.iter().map(|l| l.unshard(&self.comm)).collect()
    }
}
