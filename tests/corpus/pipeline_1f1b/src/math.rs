//! One stage's layer, `y = tanh(x·W)` on B×D activations, the loss, and the whole
//! stack trained serially (the reference).

pub const B: usize = 3;
pub const D: usize = 6;
pub const LR: f64 = 0.1;
pub const MAX_NORM: f64 = 0.5;

pub fn lcg_vec(seed: u64, n: usize, scale: f64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) * scale
        })
        .collect()
}

pub fn init_weights(stage: usize) -> Vec<f64> {
    lcg_vec(300 + stage as u64, D * D, 0.7)
}

pub fn micro_batch(step: usize, mb: usize) -> (Vec<f64>, Vec<f64>) {
    let seed = 10_000 + (step * 1000 + mb) as u64;
    (lcg_vec(seed, B * D, 1.0), lcg_vec(seed + 500_000, B * D, 0.6))
}

pub fn forward(x: &[f64], w: &[f64]) -> Vec<f64> {
    (0..B * D)
        .map(|ij| {
            let (i, j) = (ij / D, ij % D);
            (0..D).map(|k| x[i * D + k] * w[k * D + j]).sum::<f64>().tanh()
        })
        .collect()
}

/// (dL/dx, dL/dW) given dL/dy.
pub fn backward(x: &[f64], y: &[f64], w: &[f64], dy: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let dz: Vec<f64> = dy.iter().zip(y).map(|(g, y)| g * (1.0 - y * y)).collect();
    let dx = (0..B * D).map(|ik| (0..D).map(|j| dz[ik / D * D + j] * w[ik % D * D + j]).sum()).collect();
    let dw = (0..D * D).map(|kj| (0..B).map(|i| x[i * D + kj / D] * dz[i * D + kj % D]).sum()).collect();
    (dx, dw)
}

pub fn loss(y: &[f64], target: &[f64]) -> (f64, Vec<f64>) {
    let d: Vec<f64> = y.iter().zip(target).map(|(a, b)| a - b).collect();
    (0.5 * d.iter().map(|v| v * v).sum::<f64>(), d)
}

/// Clip factor for a global gradient norm.
pub fn clip_scale(norm: f64) -> f64 {
    (MAX_NORM / (norm + 1e-12)).min(1.0)
}

/// Serial training of `stages` stacked layers: final weights and the loss per step.
pub fn serial(stages: usize, microbatches: usize, steps: usize) -> (Vec<Vec<f64>>, Vec<f64>) {
    let mut ws: Vec<Vec<f64>> = (0..stages).map(init_weights).collect();
    let mut losses = Vec::with_capacity(steps);
    for step in 0..steps {
        let mut grads = vec![vec![0.0; D * D]; stages];
        let mut total = 0.0;
        for mb in 0..microbatches {
            let (x, t) = micro_batch(step, mb);
            let mut acts = vec![x];
            for w in &ws {
                let y = forward(acts.last().unwrap(), w);
                acts.push(y);
            }
            let (l, mut dy) = loss(&acts[stages], &t);
            total += l;
            for s in (0..stages).rev() {
                let (dx, dw) = backward(&acts[s], &acts[s + 1], &ws[s], &dy);
                grads[s].iter_mut().zip(dw).for_each(|(g, d)| *g += d);
                dy = dx;
            }
        }
        let norm = grads.iter().flatten().map(|g| g * g).sum::<f64>().sqrt();
        let scale = clip_scale(norm);
        for (w, g) in ws.iter_mut().zip(&grads) {
            w.iter_mut().zip(g).for_each(|(w, g)| *w -= LR * scale * g);
        }
        losses.push(total);
    }
    (ws, losses)
}

pub fn max_abs_diff(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max)
}
