//! The serial reference: full-batch Adam with clipping on one process.

use crate::model::{Dataset, Mlp};
use crate::optim::{clip_coef, Adam, Optimizer};

pub fn train(model: Mlp, data: &Dataset, steps: usize, lr: f64, clip: f64, seed: u64) -> (Vec<f64>, Vec<f64>) {
    let mut p = model.init(seed);
    let mut opt = Adam::new(p.len(), lr);
    let mut g = vec![0.0; p.len()];
    let mut losses = Vec::with_capacity(steps);
    for _ in 0..steps {
        let loss = model.loss_grad(&p, &data.x, &data.y, data.rows(), &mut g);
        let norm = g.iter().map(|v| v * v).sum::<f64>().sqrt();
        let coef = clip_coef(norm, clip);
        g.iter_mut().for_each(|v| *v *= coef);
        opt.step(&mut p, &g);
        losses.push(loss);
    }
    (p, losses)
}

/// Largest relative difference, scaled by max(1, |b|).
pub fn max_rel_diff(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs() / y.abs().max(1.0)).fold(0.0, f64::max)
}
