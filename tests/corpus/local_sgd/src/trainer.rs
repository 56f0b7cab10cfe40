//! Local SGD: every rank trains its own replica on its shard and the replicas are
//! averaged every `sync_every` steps.

use crate::cli::Config;
use crate::model::{self, Model, Shard};
use dist_runtime::prelude::*;

pub struct Trainer {
    comm: Comm<World>,
    pub model: Model,
    cfg: Config,
    data: Shard,
    cursor: usize,
    pub steps: usize,
    pub losses: Vec<f64>,
}

impl Trainer {
    pub fn new(comm: Comm<World>, cfg: Config) -> Trainer {
        let rows = model::shard(cfg.rows, comm.size(), comm.rank());
        let data = Shard::generate(&cfg, rows);
        let model = Model::zeros(cfg.features);
        Trainer { comm, model, cfg, data, cursor: 0, steps: 0, losses: Vec::new() }
    }

    pub fn local_rows(&self) -> usize {
        self.data.len()
    }

    /// Replaces every replica's parameters by their mean.
    fn average(&mut self) -> dist_runtime::Result<()> {
        let mut flat = self.model.flat();
        self.comm.all_reduce(&mut flat, ReduceOp::Sum)?;
        let n = self.comm.size() as f64;
        flat.iter_mut().for_each(|p| *p /= n);
        self.model.load(&flat);
        Ok(())
    }

    /// Mean squared error of the (averaged) model over the whole data set.
    pub fn global_loss(&self) -> dist_runtime::Result<f64> {
        let mut acc = [self.model.sse(&self.data), self.data.len() as f64];
        self.comm.all_reduce(&mut acc, ReduceOp::Sum)?;
        Ok(acc[0] / acc[1])
    }

    /// Trains until the global loss reaches the target or `max_steps` run out. The
    /// stopping test uses an all-reduced loss, so every rank leaves the loop together.
    pub fn train(&mut self) -> dist_runtime::Result<bool> {
        while self.steps < self.cfg.max_steps {
            model::local_step(&mut self.model, &self.data, &mut self.cursor, &self.cfg);
            self.steps += 1;
            if self.steps % self.cfg.sync_every == 0 || self.steps == self.cfg.max_steps {
                self.average()?;
                let loss = self.global_loss()?;
                self.losses.push(loss);
                if loss < self.cfg.target_loss {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    /// Collects every replica on rank 0, checks they agree, and hands rank 0's copy to
    /// everybody. Returns the largest disagreement rank 0 saw (0 elsewhere).
    pub fn finalize(&mut self) -> dist_runtime::Result<f64> {
        let mut flat = self.model.flat();
        let width = flat.len();
        let mut spread = 0.0;
        if self.comm.rank() == 0 {
            let mut all = vec![0.0; width * self.comm.size()];
            self.comm.gather(&flat, Some(&mut all[..]), 0)?;
            spread = all
                .chunks_exact(width)
                .flat_map(|replica| replica.iter().zip(&flat).map(|(a, b)| (a - b).abs()))
                .fold(0.0, f64::max);
        } else {
            self.comm.gather(&flat, None, 0)?;
        }
        self.comm.broadcast(&mut flat, 0)?;
        self.model.load(&flat);
        Ok(spread)
    }
}
