//! Synthetic regression data: every rank can regenerate any sample from the seed, so
//! the serial reference and the shards see exactly the same numbers.

/// splitmix64: a cheap, good-enough hash for reproducible data.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A value in [-1, 1) determined by (seed, a, b).
fn uniform(seed: u64, a: u64, b: u64) -> f64 {
    let h = mix(seed ^ mix(a.wrapping_mul(0x1000_0001) ^ mix(b)));
    (h >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
}

#[derive(Clone, Debug)]
pub struct Sample {
    pub x: Vec<f64>,
    pub y: f64,
}

/// y = w* . x + b* + small noise, with w*_j growing with j so that the gradient
/// components differ in scale (Adam's per-parameter step matters).
pub struct Dataset {
    pub features: usize,
    pub samples: usize,
    seed: u64,
}

impl Dataset {
    pub fn new(features: usize, samples: usize, seed: u64) -> Self {
        Dataset { features, samples, seed }
    }

    pub fn true_weights(&self) -> Vec<f64> {
        (0..self.features).map(|j| 0.5 + j as f64 * 0.75 * if j % 2 == 0 { 1.0 } else { -1.0 }).collect()
    }

    pub fn true_bias(&self) -> f64 {
        -1.25
    }

    pub fn sample(&self, i: usize) -> Sample {
        let x: Vec<f64> = (0..self.features).map(|j| uniform(self.seed, i as u64, j as u64)).collect();
        let w = self.true_weights();
        let noise = 0.01 * uniform(self.seed ^ 0xdead_beef, i as u64, 0);
        let y = x.iter().zip(&w).map(|(a, b)| a * b).sum::<f64>() + self.true_bias() + noise;
        Sample { x, y }
    }

    /// The samples of `range`, in order.
    pub fn slice(&self, range: std::ops::Range<usize>) -> Vec<Sample> {
        range.map(|i| self.sample(i)).collect()
    }
}

/// Contiguous block partition of `total` items over `parts` owners: the first
/// `total % parts` owners get one extra item.
pub fn block_counts(total: usize, parts: usize) -> Vec<usize> {
    (0..parts).map(|k| total / parts + usize::from(k < total % parts)).collect()
}

/// The offsets that go with `counts` (exclusive prefix sums).
pub fn offsets(counts: &[usize]) -> Vec<usize> {
    counts
        .iter()
        .scan(0, |acc, &c| {
            let start = *acc;
            *acc += c;
            Some(start)
        })
        .collect()
}
