//! Linear regression with squared loss, the data it learns from, and serial training.

use crate::RunConfig;

/// Rows `start..end` of the global data set.
pub struct Shard {
    pub x: Vec<f64>,
    pub y: Vec<f64>,
    pub features: usize,
}

impl Shard {
    pub fn len(&self) -> usize {
        self.y.len()
    }

    pub fn is_empty(&self) -> bool {
        self.y.is_empty()
    }
}

fn lcg(state: &mut u64) -> f64 {
    *state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    ((*state >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
}

/// Sample `i` of the synthetic data set: y = w·x + b + noise.
fn sample(cfg: &RunConfig, i: usize) -> (Vec<f64>, f64) {
    let mut s = cfg.seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let x: Vec<f64> = (0..cfg.features).map(|_| lcg(&mut s)).collect();
    let y = x.iter().enumerate().map(|(j, v)| (j as f64 + 1.0) * 0.5 * v).sum::<f64>() - 0.3 + 0.05 * lcg(&mut s);
    (x, y)
}

/// The shard of data `owner` of `owners` holds: contiguous rows, the first
/// `samples % owners` shards one row longer.
pub fn shard(cfg: &RunConfig, owner: usize, owners: usize) -> Shard {
    let (q, r) = (cfg.samples / owners, cfg.samples % owners);
    let start = owner * q + owner.min(r);
    let end = start + q + usize::from(owner < r);
    let (mut x, mut y) = (Vec::new(), Vec::new());
    for i in start..end {
        let (xi, yi) = sample(cfg, i);
        x.extend(xi);
        y.push(yi);
    }
    Shard { x, y, features: cfg.features }
}

/// Sum over the shard of the gradient of ½(w·x + b − y)², and the summed loss.
pub fn gradient(params: &[f64], shard: &Shard) -> (Vec<f64>, f64) {
    let f = shard.features;
    let mut g = vec![0.0; f + 1];
    let mut loss = 0.0;
    for (row, y) in shard.x.chunks(f).zip(&shard.y) {
        let pred = row.iter().zip(params).map(|(a, b)| a * b).sum::<f64>() + params[f];
        let err = pred - y;
        loss += 0.5 * err * err;
        g.iter_mut().zip(row).for_each(|(gi, xi)| *gi += err * xi);
        g[f] += err;
    }
    (g, loss)
}

/// One SGD step with the summed gradient of all `samples` rows.
pub fn apply(params: &mut [f64], grad: &[f64], lr: f64, samples: usize) {
    params.iter_mut().zip(grad).for_each(|(p, g)| *p -= lr * g / samples as f64);
}

/// The same training in one process, summing the shards' gradients in shard order
/// as the server does, so the result is bitwise comparable.
pub fn train_serial(cfg: &RunConfig, owners: usize) -> (Vec<f64>, Vec<f64>) {
    let shards: Vec<Shard> = (0..owners).map(|o| shard(cfg, o, owners)).collect();
    let mut params = vec![0.0; cfg.n_params()];
    let mut losses = Vec::with_capacity(cfg.rounds);
    for _ in 0..cfg.rounds {
        let mut total = vec![0.0; cfg.n_params()];
        let mut loss = 0.0;
        for s in &shards {
            let (g, l) = gradient(&params, s);
            total.iter_mut().zip(&g).for_each(|(t, gi)| *t += gi);
            loss += l;
        }
        apply(&mut params, &total, cfg.lr, cfg.samples);
        losses.push(loss / cfg.samples as f64);
    }
    (params, losses)
}
