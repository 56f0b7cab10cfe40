//! ZeRO-1 style sharded optimizer state: every rank keeps the full parameters for the
//! forward/backward pass, but the gradient is reduce-scattered, each rank runs Adam on
//! its own shard only, and the updated shards are all-gathered back.

use crate::config::{Config, Layout};
use crate::model::shard;
use crate::optim::{clip_scale, Adam};
use dist_runtime::prelude::*;

/// Per-rank shard sizes for `total` parameters over `n` ranks.
fn shard_counts(layout: Layout, total: usize, n: usize) -> Vec<usize> {
    match layout {
        Layout::Ragged => (0..n).map(|j| shard(total, n, j)).map(|(a, b)| b - a).collect(),
        Layout::Padded => vec![total.div_ceil(n); n],
    }
}

/// This rank's half-open range of the flat parameters (past `total` under padding).
fn my_range(layout: Layout, total: usize, n: usize, me: usize) -> (usize, usize) {
    match layout {
        Layout::Ragged => shard(total, n, me),
        Layout::Padded => {
            let c = total.div_ceil(n);
            (me * c, (me + 1) * c)
        }
    }
}

pub struct ZeroTrainer {
    world: Comm<World>,
    layout: Layout,
    counts: Vec<usize>,
    /// Full parameters (what the model reads).
    pub params: Vec<f64>,
    /// This rank's shard of the parameters (padded with zeros under `Layout::Padded`).
    shard: Vec<f64>,
    adam: Adam,
    clip: Option<f64>,
    /// Full parameters gathered on rank 0 at each checkpoint.
    pub checkpoints: Vec<Vec<f64>>,
}

impl ZeroTrainer {
    pub fn new(world: &Comm<World>, cfg: &Config, params: Vec<f64>) -> ZeroTrainer {
        let (n, me) = (world.size(), world.rank());
        let total = params.len();
        let counts = shard_counts(cfg.layout, total, n);
        let (lo, hi) = my_range(cfg.layout, total, n, me);
        let shard: Vec<f64> = (lo..hi).map(|i| params.get(i).copied().unwrap_or(0.0)).collect();
        ZeroTrainer {
            world: world.clone(),
            layout: cfg.layout,
            adam: Adam::new(shard.len(), cfg.lr),
            counts,
            params,
            shard,
            clip: cfg.clip,
            checkpoints: Vec::new(),
        }
    }

    fn padded_len(&self) -> usize {
        self.counts.iter().sum()
    }

    /// The loss summed over every rank's rows.
    pub fn global_loss(&self, local: f64) -> dist_runtime::Result<f64> {
        let mut l = [local];
        self.world.all_reduce(&mut l, ReduceOp::Sum)?;
        Ok(l[0])
    }

    /// Reduces the full local gradient `grad` to this rank's shard of the sum.
    fn reduce_grad(&self, grad: &[f64]) -> dist_runtime::Result<Vec<f64>> {
        let mut mine = vec![0.0; self.shard.len()];
        match self.layout {
            Layout::Ragged => self.world.reduce_scatter_v(grad, &mut mine, &self.counts, ReduceOp::Sum)?,
            Layout::Padded => {
                let mut padded = grad.to_vec();
                padded.resize(self.padded_len(), 0.0);
                self.world.reduce_scatter(&padded, &mut mine, ReduceOp::Sum)?;
            }
        }
        Ok(mine)
    }

    /// Scales the gradient shard so that the global gradient norm is at most `max`.
    fn clip_grad(&self, gshard: &mut [f64], max: f64) -> dist_runtime::Result<()> {
        let mut sq = [gshard.iter().map(|g| g * g).sum::<f64>()];
        self.world.all_reduce(&mut sq, ReduceOp::Sum)?;
        let s = clip_scale(sq[0], max);
        gshard.iter_mut().for_each(|g| *g *= s);
        Ok(())
    }

    /// Rebuilds the full parameters from every rank's shard.
    fn gather_params(&mut self) -> dist_runtime::Result<()> {
        match self.layout {
            Layout::Ragged => self.world.all_gather_v(&self.shard, &mut self.params, &self.counts)?,
            Layout::Padded => {
                let mut full = vec![0.0; self.padded_len()];
                self.world.all_gather(&self.shard, &mut full)?;
                full.truncate(self.params.len());
                self.params = full;
            }
        }
        Ok(())
    }

    /// One optimizer step from this rank's accumulated (unreduced) gradient.
    pub fn step(&mut self, grad: &[f64]) -> dist_runtime::Result<()> {
        let mut gshard = self.reduce_grad(grad)?;
        if let Some(max) = self.clip {
            self.clip_grad(&mut gshard, max)?;
        }
        self.adam.step(&mut self.shard, &gshard);
        self.gather_params()
    }

    /// Gathers the full parameters on rank 0, which keeps them.
    pub fn checkpoint(&mut self) -> dist_runtime::Result<()> {
        let root = 0;
        let total = self.params.len();
        if self.world.rank() == root {
            let mut full = vec![0.0; self.padded_len()];
            match self.layout {
                Layout::Ragged => self.world.gather_v(&self.shard, Some(&mut full[..]), &self.counts, root)?,
                Layout::Padded => self.world.gather(&self.shard, Some(&mut full[..]), root)?,
            }
            full.truncate(total);
            self.checkpoints.push(full);
        } else {
            match self.layout {
                Layout::Ragged => self.world.gather_v(&self.shard, None, &self.counts, root)?,
                Layout::Padded => self.world.gather(&self.shard, None, root)?,
            }
        }
        Ok(())
    }
}
