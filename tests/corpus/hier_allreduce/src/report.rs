//! Periodic loss reports: every rank's loss gathered to rank 0, the global mean
//! all-reduced so that every rank takes the same early-stopping decision.

use dist_runtime::prelude::*;

pub const ROOT: usize = 0;

#[derive(Clone, Debug, Default)]
pub struct StepStats {
    pub loss_sum: f64,
    pub samples: usize,
}

impl StepStats {
    pub fn add(&mut self, loss: f64) {
        self.loss_sum += loss;
        self.samples += 1;
    }
}

pub struct Reporter<'a> {
    world: &'a Comm<World>,
    every: usize,
    pub history: Vec<(usize, f64)>,
}

impl<'a> Reporter<'a> {
    pub fn new(world: &'a Comm<World>, every: usize) -> Self {
        Reporter { world, every, history: Vec::new() }
    }

    pub fn due(&self, step: usize) -> bool {
        (step + 1) % self.every == 0
    }

    /// Gathers the per-rank losses to the root (which prints them) and returns the
    /// global mean loss of this step on every rank.
    pub fn report(&mut self, step: usize, stats: &StepStats) -> dist_runtime::Result<f64> {
        let n = self.world.size();
        let mine = [stats.loss_sum, stats.samples as f64];
        if self.world.rank() == ROOT {
            let mut all = vec![0.0; 2 * n];
            self.world.gather(&mine[..], Some(&mut all[..]), ROOT)?;
            let per_rank: Vec<String> =
                all.chunks(2).map(|c| format!("{:.4}", c[0] / c[1].max(1.0))).collect();
            println!("step {:>4}: per-rank loss [{}]", step + 1, per_rank.join(", "));
        } else {
            self.world.gather(&mine[..], None, ROOT)?;
        }
        let mut total = [stats.loss_sum, stats.samples as f64];
        self.world.all_reduce(&mut total, ReduceOp::Sum)?;
        let mean = total[0] / total[1];
        self.history.push((step, mean));
        Ok(mean)
    }
}
