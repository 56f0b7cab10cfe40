//! The model: LAYERS linear maps `y = x·W` (D×D) trained by SGD on a mean-squared
//! error; plain local math shared by the parallel trainer and the serial reference.

use crate::config::Config;

pub const D: usize = 10;
pub const LAYERS: usize = 4;

/// splitmix64, so every rank draws the same numbers.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03)
    }
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn vec(&mut self, n: usize, scale: f32) -> Vec<f32> {
        (0..n).map(|_| ((self.next_u64() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale).collect()
    }
}

/// The half-open range of `n` items that part `i` of `parts` owns.
pub fn shard(n: usize, parts: usize, i: usize) -> (usize, usize) {
    let (base, extra) = (n / parts, n % parts);
    let lo = i * base + i.min(extra);
    (lo, lo + base + usize::from(i < extra))
}

pub fn init_layer(l: usize) -> Vec<f32> {
    Rng::new(17 + l as u64).vec(D * D, 0.45)
}

/// Input and target of micro-batch `m` of data-parallel replica `replica` at `step`.
pub fn micro_batch(cfg: &Config, step: usize, replica: usize, m: usize) -> (Vec<f32>, Vec<f32>) {
    let mut g = Rng::new(1_000 + ((step * 64 + replica) * 16 + m) as u64);
    (g.vec(cfg.rows * D, 1.0), g.vec(cfg.rows * D, 0.5))
}

/// `x[:, r0..r1] · w_rows`, where `w_rows` holds rows r0..r1 of W: the partial product a
/// tensor-parallel rank contributes (the full product when the range is 0..D).
pub fn partial_forward(x: &[f32], w_rows: &[f32], (r0, r1): (usize, usize), rows: usize) -> Vec<f32> {
    let mut y = vec![0.0; rows * D];
    for i in 0..rows {
        for k in r0..r1 {
            let xik = x[i * D + k];
            let wk = &w_rows[(k - r0) * D..(k - r0 + 1) * D];
            y[i * D..(i + 1) * D].iter_mut().zip(wk).for_each(|(y, w)| *y += xik * w);
        }
    }
    y
}

/// Backward of `partial_forward`: (dW rows r0..r1, dX with only columns r0..r1 filled).
pub fn partial_backward(x: &[f32], dy: &[f32], w_rows: &[f32], (r0, r1): (usize, usize), rows: usize) -> (Vec<f32>, Vec<f32>) {
    let mut dw = vec![0.0; (r1 - r0) * D];
    let mut dx = vec![0.0; rows * D];
    for i in 0..rows {
        let dyi = &dy[i * D..(i + 1) * D];
        for k in r0..r1 {
            let wk = &w_rows[(k - r0) * D..(k - r0 + 1) * D];
            dx[i * D + k] = dyi.iter().zip(wk).map(|(a, b)| a * b).sum();
            let xik = x[i * D + k];
            dw[(k - r0) * D..(k - r0 + 1) * D].iter_mut().zip(dyi).for_each(|(g, d)| *g += xik * d);
        }
    }
    (dw, dx)
}

/// 0.5·Σ(y − t)² / scale and its gradient.
pub fn mse(y: &[f32], t: &[f32], scale: f32) -> (f32, Vec<f32>) {
    let d: Vec<f32> = y.iter().zip(t).map(|(a, b)| (a - b) / scale).collect();
    let loss = y.iter().zip(t).map(|(a, b)| 0.5 * (a - b) * (a - b)).sum::<f32>() / scale;
    (loss, d)
}

/// Training history that both the serial and the parallel runs produce.
pub struct History {
    pub weights: Vec<Vec<f32>>,
    pub losses: Vec<f32>,
    pub grad_norms: Vec<f32>,
}

/// The same training, all layers and all replicas in one process.
pub fn serial_reference(cfg: &Config, dp: usize) -> History {
    let mut ws: Vec<Vec<f32>> = (0..LAYERS).map(init_layer).collect();
    let (mut losses, mut grad_norms) = (Vec::new(), Vec::new());
    let scale = (cfg.rows * cfg.micro_batches) as f32;
    for step in 0..cfg.steps {
        let mut grads = vec![vec![0.0f32; D * D]; LAYERS];
        let mut loss = 0.0;
        for replica in 0..dp {
            for m in 0..cfg.micro_batches {
                let (x, t) = micro_batch(cfg, step, replica, m);
                let mut acts = vec![x];
                for w in &ws {
                    acts.push(partial_forward(acts.last().unwrap(), w, (0, D), cfg.rows));
                }
                let (l, mut dy) = mse(&acts[LAYERS], &t, scale);
                loss += l / dp as f32;
                for l in (0..LAYERS).rev() {
                    let (dw, dx) = partial_backward(&acts[l], &dy, &ws[l], (0, D), cfg.rows);
                    grads[l].iter_mut().zip(&dw).for_each(|(g, d)| *g += d / dp as f32);
                    dy = dx;
                }
            }
        }
        grad_norms.push(grads.iter().flatten().map(|g| g * g).sum::<f32>().sqrt());
        for (w, g) in ws.iter_mut().zip(&grads) {
            w.iter_mut().zip(g).for_each(|(w, g)| *w -= cfg.lr * g);
        }
        losses.push(loss);
    }
    History { weights: ws, losses, grad_norms }
}

pub fn max_rel_diff(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs() / (1.0 + y.abs())).fold(0.0, f32::max)
}
