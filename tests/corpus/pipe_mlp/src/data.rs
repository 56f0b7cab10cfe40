//! Deterministic data: a seeded generator and the micro-batches of every replica.

/// SplitMix64: the same stream on every rank for the same seed.
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
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 52) as f64 * 2.0 - 1.0
    }
    pub fn vec(&mut self, n: usize, scale: f64) -> Vec<f64> {
        (0..n).map(|_| self.uniform() * scale).collect()
    }
}

/// Inputs and targets of micro-batch `mb` of replica `replica` at `step`.
pub fn micro_batch(step: usize, replica: usize, mb: usize, rows: usize, width: usize) -> (Vec<f64>, Vec<f64>) {
    let seed = 10_000 + ((step * 64 + replica) * 64 + mb) as u64;
    let mut g = Rng::new(seed);
    (g.vec(rows * width, 1.0), g.vec(rows * width, 0.7))
}
