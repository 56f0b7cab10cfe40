//! Deterministic synthetic data: sample i depends only on the seed and i, so any
//! sharding of the data set sees the same samples as the serial reference.

use std::ops::Range;

/// SplitMix64, enough randomness for synthetic data.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [-1, 1).
    pub fn symmetric(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }
}

#[derive(Debug, Clone)]
pub struct Sample {
    pub x: Vec<f64>,
    pub y: f64,
}

/// One rank's block of the global data set.
#[derive(Debug, Clone)]
pub struct Shard {
    pub range: Range<usize>,
    pub samples: Vec<Sample>,
}

impl Shard {
    /// Divides every feature by its scale (the bias column has scale 1).
    pub fn normalize(&mut self, scale: &[f64]) {
        for s in &mut self.samples {
            s.x.iter_mut().zip(scale).filter(|(_, k)| **k > 0.0).for_each(|(x, k)| *x /= k);
        }
    }

    pub fn len(&self) -> usize {
        self.samples.len()
    }
}

/// The weights the labels are drawn from.
pub fn true_weights(dim: usize, seed: u64) -> Vec<f64> {
    let mut g = SplitMix64::new(seed ^ 0xABCD_EF01);
    (0..dim).map(|_| 3.0 * g.symmetric()).collect()
}

/// Sample `i` of the global data set: features with uneven ranges, a bias column of
/// ones last, and a label from the true weights with some label noise.
pub fn sample(i: usize, dim: usize, seed: u64, w_true: &[f64]) -> Sample {
    let mut g = SplitMix64::new(seed.wrapping_mul(0x1000_0000_01B3) ^ (i as u64).wrapping_mul(0x9E37_79B9));
    let mut x: Vec<f64> = (0..dim - 1).map(|j| g.symmetric() * (1.0 + j as f64)).collect();
    x.push(1.0);
    let z: f64 = x.iter().zip(w_true).map(|(a, b)| a * b / (1.0 + 0.3 * a.abs())).sum();
    let flip = g.next_u64() % 17 == 0;
    let y = if (z > 0.0) != flip { 1.0 } else { 0.0 };
    Sample { x, y }
}

/// The block of `len` items that part `idx` of `parts` owns (the first `len % parts`
/// parts hold one more).
pub fn block_range(len: usize, parts: usize, idx: usize) -> Range<usize> {
    let base = len / parts;
    let extra = len % parts;
    let start = idx * base + idx.min(extra);
    let size = base + usize::from(idx < extra);
    start..start + size
}

/// Rank `rank`'s shard of `len` samples over `size` ranks.
pub fn shard(len: usize, dim: usize, seed: u64, rank: usize, size: usize) -> Shard {
    let w_true = true_weights(dim, seed);
    let range = block_range(len, size, rank);
    let samples = range.clone().map(|i| sample(i, dim, seed, &w_true)).collect();
    Shard { range, samples }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_cover_everything_once() {
        for parts in 1..9 {
            let mut next = 0;
            for idx in 0..parts {
                let r = block_range(1003, parts, idx);
                assert_eq!(r.start, next);
                next = r.end;
            }
            assert_eq!(next, 1003);
        }
    }
}
