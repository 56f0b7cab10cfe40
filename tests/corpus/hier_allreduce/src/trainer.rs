//! The training loop, distributed and serial.

use crate::config::Config;
use crate::model::{sample, sample_indices, Mlp};
use crate::report::{Reporter, StepStats};
use crate::sync::GradSync;
use dist_runtime::prelude::*;

pub struct Outcome {
    pub model: Mlp,
    pub history: Vec<(usize, f64)>,
    pub steps_run: usize,
}

pub struct Trainer<'a> {
    cfg: &'a Config,
    world: &'a Comm<World>,
    sync: GradSync,
    model: Mlp,
}

impl<'a> Trainer<'a> {
    pub fn new(cfg: &'a Config, world: &'a Comm<World>, sync: GradSync) -> Self {
        Trainer { cfg, world, sync, model: Mlp::new(cfg.hidden, cfg.seed) }
    }

    /// Forward/backward over this rank's `accum` micro-batches of step `s`.
    fn local_gradient(&self, s: usize, grad: &mut [f64]) -> StepStats {
        let (r, n) = (self.world.rank(), self.world.size());
        let mut stats = StepStats::default();
        for m in 0..self.cfg.accum {
            for idx in sample_indices(s, m, self.cfg.accum, r, n, self.cfg.micro) {
                let (x, y) = sample(self.cfg.seed, idx);
                stats.add(self.model.accumulate(&x, y, grad));
            }
        }
        stats
    }

    pub fn run(mut self) -> dist_runtime::Result<Outcome> {
        let total = self.world.size() * self.cfg.accum * self.cfg.micro;
        let mut reporter = Reporter::new(self.world, self.cfg.report_every);
        let mut steps_run = 0;
        for s in 0..self.cfg.steps {
            let mut grad = vec![0.0; self.model.n_params()];
            let stats = self.local_gradient(s, &mut grad);
            self.sync.sum(&mut grad)?;
            self.model.apply(&grad, total, self.cfg.lr);
            steps_run = s + 1;
            if reporter.due(s) {
                let global = reporter.report(s, &stats)?;
                if let Some(stop) = self.cfg.stop_loss {
                    if global < stop {
                        break;
                    }
                }
            }
        }
        Ok(Outcome { model: self.model, history: reporter.history, steps_run })
    }
}

/// The same training in one process: every rank's micro-batches, in one sum.
pub fn serial(cfg: &Config, world_size: usize) -> Outcome {
    let mut model = Mlp::new(cfg.hidden, cfg.seed);
    let total = world_size * cfg.accum * cfg.micro;
    let mut history = Vec::new();
    let mut steps_run = 0;
    for s in 0..cfg.steps {
        let mut grad = vec![0.0; model.n_params()];
        let mut loss = 0.0;
        for r in 0..world_size {
            for m in 0..cfg.accum {
                for idx in sample_indices(s, m, cfg.accum, r, world_size, cfg.micro) {
                    let (x, y) = sample(cfg.seed, idx);
                    loss += model.accumulate(&x, y, &mut grad);
                }
            }
        }
        model.apply(&grad, total, cfg.lr);
        steps_run = s + 1;
        if (s + 1) % cfg.report_every == 0 {
            let mean = loss / total as f64;
            history.push((s, mean));
            if matches!(cfg.stop_loss, Some(stop) if mean < stop) {
                break;
            }
        }
    }
    Outcome { model, history, steps_run }
}
