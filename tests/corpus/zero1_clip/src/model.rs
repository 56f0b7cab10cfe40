//! A one-hidden-layer tanh MLP regressor on synthetic data, with its parameters kept
//! flat: `W1 (hidden × inputs) | b1 (hidden) | w2 (hidden) | b2`.

use std::ops::Range;

/// SplitMix64, so every rank draws the same data for the same seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [-1, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }
}

/// The half-open range `[len·j/n, len·(j+1)/n)`: part j of n.
pub fn shard(len: usize, n: usize, j: usize) -> (usize, usize) {
    (len * j / n, len * (j + 1) / n)
}

/// Rows of micro-batch k of `accum`.
pub fn micro_batch(rows: usize, accum: usize, k: usize) -> Range<usize> {
    let (a, b) = shard(rows, accum, k);
    a..b
}

pub struct Dataset {
    pub x: Vec<f64>,
    pub y: Vec<f64>,
    pub inputs: usize,
}

impl Dataset {
    pub fn synthetic(rows: usize, inputs: usize, seed: u64) -> Dataset {
        let mut g = Rng::new(seed ^ 0xDA7A);
        let x: Vec<f64> = (0..rows * inputs).map(|_| g.uniform()).collect();
        let y = x
            .chunks(inputs)
            .map(|r| (1.5 * r[0]).sin() + r.iter().skip(1).map(|v| 0.3 * v).sum::<f64>())
            .collect();
        Dataset { x, y, inputs }
    }
}

pub struct Mlp {
    pub inputs: usize,
    pub hidden: usize,
}

impl Mlp {
    pub fn new(inputs: usize, hidden: usize) -> Mlp {
        Mlp { inputs, hidden }
    }

    pub fn num_params(&self) -> usize {
        self.hidden * self.inputs + 2 * self.hidden + 1
    }

    pub fn init(&self, seed: u64) -> Vec<f64> {
        let mut g = Rng::new(seed);
        let s = 1.0 / (self.inputs as f64).sqrt();
        (0..self.num_params()).map(|_| g.uniform() * s).collect()
    }

    /// Adds `scale ×` the gradient of `Σ ½(pred − y)²` over `rows` into `grad`, and
    /// returns `scale ×` that loss.
    pub fn accumulate(&self, p: &[f64], data: &Dataset, rows: Range<usize>, scale: f64, grad: &mut [f64]) -> f64 {
        let (i_n, h_n) = (self.inputs, self.hidden);
        debug_assert_eq!(data.inputs, i_n, "dataset and model disagree on the input width");
        let (w1, rest) = p.split_at(h_n * i_n);
        let (b1, rest) = rest.split_at(h_n);
        let (w2, b2) = rest.split_at(h_n);
        let mut loss = 0.0;
        for row in rows {
            let x = &data.x[row * i_n..(row + 1) * i_n];
            let h: Vec<f64> = (0..h_n)
                .map(|j| (b1[j] + w1[j * i_n..(j + 1) * i_n].iter().zip(x).map(|(w, v)| w * v).sum::<f64>()).tanh())
                .collect();
            let pred = b2[0] + h.iter().zip(w2).map(|(a, b)| a * b).sum::<f64>();
            let d = pred - data.y[row];
            loss += 0.5 * d * d * scale;
            let ds = d * scale;
            let (g_w1, g_rest) = grad.split_at_mut(h_n * i_n);
            let (g_b1, g_rest) = g_rest.split_at_mut(h_n);
            let (g_w2, g_b2) = g_rest.split_at_mut(h_n);
            g_b2[0] += ds;
            for j in 0..h_n {
                g_w2[j] += ds * h[j];
                let dz = ds * w2[j] * (1.0 - h[j] * h[j]);
                g_b1[j] += dz;
                g_w1[j * i_n..(j + 1) * i_n].iter_mut().zip(x).for_each(|(g, v)| *g += dz * v);
            }
        }
        loss
    }
}
