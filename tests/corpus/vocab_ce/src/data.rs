//! Deterministic parameters and token batches, identical on every rank.

pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x5DEE_CE66_D1CE_4E5B)
    }
    pub fn next_u64(&mut self) -> u64 {
        // xorshift64*
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn normal_ish(&mut self) -> f64 {
        // The sum of four uniforms, centred: good enough for an initialisation.
        (0..4).map(|_| (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64).sum::<f64>() - 2.0
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// The rows `[lo, hi)` of a vocabulary of `v` owned by shard `k` of `parts`.
pub fn vocab_range(v: usize, parts: usize, k: usize) -> (usize, usize) {
    let base = v / parts;
    let extra = v % parts;
    let lo = k * base + k.min(extra);
    (lo, lo + base + usize::from(k < extra))
}

/// Embedding table and output projection, both `vocab × dim`, row-major.
pub fn init_params(vocab: usize, dim: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
    let mut g = Rng::new(seed);
    let emb = (0..vocab * dim).map(|_| 0.5 * g.normal_ish()).collect();
    let out = (0..vocab * dim).map(|_| 0.5 * g.normal_ish()).collect();
    (emb, out)
}

/// Replica `replica`'s batch for step `step`: input tokens and next-token targets.
pub fn batch(vocab: usize, size: usize, seed: u64, replica: usize, step: usize) -> (Vec<usize>, Vec<usize>) {
    let mut g = Rng::new(seed.wrapping_mul(1_000_003).wrapping_add((replica * 131 + step) as u64 + 1));
    let tokens: Vec<usize> = (0..size).map(|_| g.below(vocab)).collect();
    let targets = tokens.iter().map(|&t| (3 * t + 1 + g.below(2)) % vocab).collect();
    (tokens, targets)
}
