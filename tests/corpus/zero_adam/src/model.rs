//! The model (y = w . x + b, parameters laid out as [w_0 .. w_{d-1}, b]) and the
//! serial reference trainer the distributed run is checked against.

use crate::data::{Dataset, Sample};
use crate::optim::Adam;

pub fn predict(params: &[f64], x: &[f64]) -> f64 {
    let (w, b) = params.split_at(x.len());
    x.iter().zip(w).map(|(a, b)| a * b).sum::<f64>() + b[0]
}

/// Adds the gradient of (1/total) * sum (pred - y)^2 over `batch` to `grad`, and
/// returns the batch's sum of squared errors.
pub fn accumulate(params: &[f64], batch: &[Sample], total: usize, grad: &mut [f64]) -> f64 {
    let scale = 2.0 / total as f64;
    let d = params.len() - 1;
    batch.iter().fold(0.0, |sse, s| {
        let e = predict(params, &s.x) - s.y;
        for (g, x) in grad[..d].iter_mut().zip(&s.x) {
            *g += scale * e * x;
        }
        grad[d] += scale * e;
        sse + e * e
    })
}

/// Rescales `grad` in place so that its norm is at most `max_norm`, given the norm.
pub fn clip_factor(norm: f64, max_norm: f64) -> f64 {
    if max_norm > 0.0 && norm > max_norm {
        max_norm / norm
    } else {
        1.0
    }
}

/// The same training, one process, every sample: (final params, loss per step).
pub fn train_serial(data: &Dataset, init: &[f64], steps: usize, adam: Adam, max_norm: f64) -> (Vec<f64>, Vec<f64>) {
    let all = data.slice(0..data.samples);
    let mut params = init.to_vec();
    let mut opt = adam.for_shard(params.len());
    let mut losses = Vec::with_capacity(steps);
    for _ in 0..steps {
        let mut grad = vec![0.0; params.len()];
        let sse = accumulate(&params, &all, data.samples, &mut grad);
        losses.push(sse / data.samples as f64);
        let norm = grad.iter().map(|g| g * g).sum::<f64>().sqrt();
        let f = clip_factor(norm, max_norm);
        grad.iter_mut().for_each(|g| *g *= f);
        opt.update(&mut params, &grad);
    }
    (params, losses)
}
