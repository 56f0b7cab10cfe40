//! Synthetic regression data, the same on every rank for a seed.

pub const D_IN: usize = 8;
pub const HIDDEN: usize = 24;
pub const D_MID: usize = 12;
pub const D_OUT: usize = 4;

/// SplitMix64.
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
    /// Uniform in [-scale, scale).
    pub fn uniform(&mut self, scale: f32) -> f32 {
        ((self.next_u64() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
    }
    pub fn vec(&mut self, n: usize, scale: f32) -> Vec<f32> {
        (0..n).map(|_| self.uniform(scale)).collect()
    }
}

/// `rows` inputs of width `D_IN` and their targets of width `D_OUT`.
pub struct Dataset {
    pub x: Vec<f32>,
    pub y: Vec<f32>,
    pub rows: usize,
}

impl Dataset {
    pub fn synthetic(rows: usize, seed: u64) -> Dataset {
        let mut rng = Rng::new(seed);
        let x = rng.vec(rows * D_IN, 1.0);
        let y = x
            .chunks(D_IN)
            .flat_map(|r| {
                (0..D_OUT).map(move |o| {
                    let s: f32 = r.iter().enumerate().map(|(k, v)| v * (((k + 3 * o) % 5) as f32 - 2.0) * 0.3).sum();
                    s.sin()
                })
            })
            .collect();
        Dataset { x, y, rows }
    }

    /// The inputs and targets of the given rows, in that order.
    pub fn select(&self, rows: &[usize]) -> (Vec<f32>, Vec<f32>) {
        let x = rows.iter().flat_map(|&r| self.x[r * D_IN..(r + 1) * D_IN].iter().copied()).collect();
        let y = rows.iter().flat_map(|&r| self.y[r * D_OUT..(r + 1) * D_OUT].iter().copied()).collect();
        (x, y)
    }
}

/// The global batch of `step`: `batch` consecutive rows, wrapping around the data set.
pub fn batch_rows(step: usize, batch: usize, rows: usize) -> Vec<usize> {
    (0..batch).map(|i| (step * batch + i) % rows).collect()
}

/// `[lo, hi)` of part `i` when `n` items are split into `parts` near-equal parts.
pub fn shard(n: usize, parts: usize, i: usize) -> (usize, usize) {
    let (q, r) = (n / parts, n % parts);
    let lo = i * q + i.min(r);
    (lo, lo + q + usize::from(i < r))
}

/// Initial weights of the four linear layers, `(out × in, out)` each, full size.
pub fn initial_weights(seed: u64) -> Vec<(Vec<f32>, Vec<f32>, usize, usize)> {
    let mut rng = Rng::new(seed ^ 0xA5A5);
    [(D_IN, HIDDEN), (HIDDEN, D_MID), (D_MID, HIDDEN), (HIDDEN, D_OUT)]
        .into_iter()
        .map(|(i, o)| {
            let scale = 1.0 / (i as f32).sqrt();
            (rng.vec(o * i, scale), rng.vec(o, 0.1), i, o)
        })
        .collect()
}
