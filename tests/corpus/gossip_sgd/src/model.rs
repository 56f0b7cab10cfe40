//! A linear least-squares model and each rank's shard of synthetic data.

use crate::config::Config;

struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 11) as f64) / ((1u64 << 53) as f64) * 2.0 - 1.0
    }
}

/// The weights every shard's data is generated from.
pub fn true_weights(cfg: &Config) -> Vec<f64> {
    (0..cfg.dim).map(|j| ((j as f64) * 0.7).sin() + 0.5).collect()
}

/// One rank's data: `samples` rows of `dim` features and their targets. Shards differ
/// in their feature scale, so local optima differ and gossip matters.
pub struct Shard {
    pub x: Vec<f64>,
    pub y: Vec<f64>,
    pub dim: usize,
}

impl Shard {
    pub fn generate(cfg: &Config, rank: usize) -> Shard {
        let mut rng = Lcg(cfg.seed.wrapping_mul(1000003) ^ (rank as u64 * 7919 + 17));
        let w = true_weights(cfg);
        let scale = 1.0 + 0.25 * (rank % 3) as f64;
        let mut x = Vec::with_capacity(cfg.samples * cfg.dim);
        let mut y = Vec::with_capacity(cfg.samples);
        for _ in 0..cfg.samples {
            let row: Vec<f64> = (0..cfg.dim).map(|_| scale * rng.next()).collect();
            let t = row.iter().zip(&w).map(|(a, b)| a * b).sum::<f64>() + cfg.noise * rng.next();
            x.extend_from_slice(&row);
            y.push(t);
        }
        Shard { x, y, dim: cfg.dim }
    }

    fn rows(&self) -> impl Iterator<Item = (&[f64], f64)> {
        self.x.chunks_exact(self.dim).zip(self.y.iter().copied())
    }

    /// Mean of ½(x·w − y)² over the shard.
    pub fn loss(&self, w: &[f64]) -> f64 {
        let n = self.y.len().max(1) as f64;
        self.rows().map(|(row, t)| {
            let e = dot(row, w) - t;
            0.5 * e * e
        }).sum::<f64>() / n
    }

    /// Gradient of [`loss`](Self::loss).
    pub fn grad(&self, w: &[f64]) -> Vec<f64> {
        let n = self.y.len().max(1) as f64;
        let mut g = vec![0.0; self.dim];
        for (row, t) in self.rows() {
            let e = dot(row, w) - t;
            g.iter_mut().zip(row).for_each(|(gi, xi)| *gi += e * xi);
        }
        g.iter_mut().for_each(|gi| *gi /= n);
        g
    }
}

pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// w ← w − lr·g
pub fn sgd_step(w: &mut [f64], g: &[f64], lr: f64) {
    w.iter_mut().zip(g).for_each(|(wi, gi)| *wi -= lr * gi);
}

/// Pairwise average, written so that both partners compute bitwise the same numbers.
pub fn average_into(w: &mut [f64], other: &[f64]) {
    w.iter_mut().zip(other).for_each(|(a, b)| *a = 0.5 * (*a + *b));
}
