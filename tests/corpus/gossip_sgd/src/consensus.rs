//! The periodic global check: how far apart the ranks' models are and the global loss.

use dist_runtime::prelude::*;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Check {
    pub step: usize,
    /// Mean over ranks of the local losses.
    pub loss: f64,
    /// Largest squared distance of a rank's weights from the mean.
    pub spread: f64,
}

impl Check {
    pub fn converged(&self, tol: f64) -> bool {
        self.loss < tol
    }
}

/// The squared distance of `w` from `mean`.
pub fn dist2(w: &[f64], mean: &[f64]) -> f64 {
    w.iter().zip(mean).map(|(a, b)| (a - b) * (a - b)).sum()
}

/// Sum of `w` over ranks, divided by n (the consensus model).
pub fn mean_model(world: &Comm<World>, w: &[f64]) -> dist_runtime::Result<Vec<f64>> {
    let mut sum = w.to_vec();
    world.all_reduce(&mut sum, ReduceOp::Sum)?;
    let n = world.size() as f64;
    Ok(sum.into_iter().map(|s| s / n).collect())
}

/// The global check. Collective over `world`.
pub fn global_check(world: &Comm<World>, step: usize, w: &[f64], local_loss: f64) -> dist_runtime::Result<Check> {
    let mean = mean_model(world, w)?;
    let mut spread = [dist2(w, &mean)];
    world.all_reduce(&mut spread, ReduceOp::Max)?;
    let mut loss = [local_loss];
    world.all_reduce(&mut loss, ReduceOp::Sum)?;
    Ok(Check { step, loss: loss[0] / world.size() as f64, spread: spread[0] })
}
