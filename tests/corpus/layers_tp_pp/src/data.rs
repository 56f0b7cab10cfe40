//! Shapes, the initial weights and each replica's batches: the same on every rank.

use crate::tensor::Rng;

pub const BLOCKS: usize = 2;
pub const BATCH: usize = 6;
pub const D: usize = 4;
pub const F: usize = 8;

pub fn block_weights(block: usize) -> (Vec<f32>, Vec<f32>) {
    let mut g = Rng::new(7 + block as u64);
    (g.vec(D * F, 0.6), g.vec(F * D, 0.6))
}

/// The batch of data-parallel replica `replica` at `step`: inputs and targets.
pub fn batch(step: usize, replica: usize) -> (Vec<f32>, Vec<f32>) {
    let mut g = Rng::new(1000 + 97 * step as u64 + replica as u64);
    let x = g.vec(BATCH * D, 1.0);
    let t = (0..BATCH * D).map(|i| (x[i] * 1.5).sin() * 0.5 + 0.1 * x[(i + 1) % (BATCH * D)]).collect();
    (x, t)
}

pub fn loss(y: &[f32], t: &[f32]) -> f32 {
    0.5 * y.iter().zip(t).map(|(a, b)| (a - b) * (a - b)).sum::<f32>() / BATCH as f32
}

pub fn loss_grad(y: &[f32], t: &[f32]) -> Vec<f32> {
    y.iter().zip(t).map(|(a, b)| (a - b) / BATCH as f32).collect()
}
