//! Distributed training of the MLP, each layer fully sharded.

use dist_runtime::prelude::*;

use crate::config::Config;
use crate::fsdp::FullyShardedModule;
use crate::model::{batch, layers, mse_grad, row_range, Module};
use crate::optim::clip_factor;
use crate::serial::initial_params;

pub struct ShardedMlp<M: Module> {
    pub layers: Vec<FullyShardedModule<M>>,
    world: Comm<World>,
}

impl<M: Module> ShardedMlp<M> {
    /// One forward and backward pass over this rank's rows; gradients accumulate.
    pub fn forward_backward(&mut self, x: Vec<f64>, t: &[f64], rows: usize, denom: f64) -> dist_runtime::Result<()> {
        let mut acts = vec![x];
        for layer in &self.layers {
            let y = layer.forward(acts.last().unwrap(), rows)?;
            acts.push(y);
        }
        let mut dy = mse_grad(acts.last().unwrap(), t, denom);
        for li in (0..self.layers.len()).rev() {
            dy = self.layers[li].backward(&acts[li], &acts[li + 1], &dy, rows)?;
        }
        Ok(())
    }

    /// Clips the global gradient norm to `max_norm`.
    pub fn clip(&mut self, max_norm: f64) -> dist_runtime::Result<()> {
        let mut sq = [self.layers.iter().map(|l| l.grad_sq_norm()).sum::<f64>()];
        self.world.all_reduce(&mut sq, ReduceOp::Sum)?;
        let f = clip_factor(sq[0], max_norm);
        for l in &mut self.layers {
            l.scale_grad(f);
        }
        Ok(())
    }

    pub fn step(&mut self) {
        for l in &mut self.layers {
            l.step();
        }
    }

    pub fn full_params(&self) -> dist_runtime::Result<Vec<Vec<f64>>> {
        self.layers.iter().map(|l| l.gather_params()).collect()
    }
}

pub fn train(world: &Comm<World>, cfg: &Config) -> dist_runtime::Result<Vec<Vec<f64>>> {
    let (r, n) = (world.rank(), world.size());
    let init = initial_params(cfg);
    let mut mlp = ShardedMlp {
        layers: layers(&cfg.dims)
            .into_iter()
            .zip(&init)
            .map(|(l, p)| FullyShardedModule::new(l, p, world, cfg.lr, cfg.momentum))
            .collect(),
        world: world.clone(),
    };
    let (din, dout) = (cfg.dims[0], *cfg.dims.last().unwrap());
    let (lo, hi) = row_range(cfg.rows, n, r);
    let denom = (cfg.rows * cfg.accum) as f64;
    for step in 0..cfg.steps {
        for mb in 0..cfg.accum {
            let (x, t) = batch(cfg.seed, step, mb, cfg.rows, din, dout);
            let x = x[lo * din..hi * din].to_vec();
            mlp.forward_backward(x, &t[lo * dout..hi * dout], hi - lo, denom)?;
        }
        if let Some(max_norm) = cfg.clip {
            mlp.clip(max_norm)?;
        }
        mlp.step();
    }
    mlp.full_params()
}
