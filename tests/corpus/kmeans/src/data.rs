//! Synthetic points (any rank can make any point) and their block partition.

use std::ops::Range;

/// Coordinates per point.
pub const DIM: usize = 2;

/// Points `0..n` in `parts` contiguous blocks, the first `n % parts` one larger.
#[derive(Clone, Copy, Debug)]
pub struct Blocks {
    pub n: usize,
    pub parts: usize,
}

impl Blocks {
    pub fn range(&self, p: usize) -> Range<usize> {
        let (q, rem) = (self.n / self.parts, self.n % self.parts);
        let lo = p * q + p.min(rem);
        lo..lo + q + usize::from(p < rem)
    }

    pub fn owner(&self, i: usize) -> usize {
        (0..self.parts)
            .find(|&p| self.range(p).contains(&i))
            .expect("point index past the last block")
    }

    pub fn counts(&self) -> Vec<usize> {
        (0..self.parts).map(|p| self.range(p).len()).collect()
    }
}

/// splitmix64 finaliser.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Point `i`: one of `blobs` centres plus jitter; integer, so every sum is exact.
pub fn point(seed: u64, blobs: usize, i: usize) -> [i64; DIM] {
    let h = mix(seed ^ mix(i as u64));
    let blob = (h % blobs.max(1) as u64) as i64;
    let cx = 100 + (blob * 373) % 800;
    let cy = 100 + (blob * 617) % 800;
    let jx = ((h >> 16) % 121) as i64 - 60;
    let jy = ((h >> 32) % 121) as i64 - 60;
    [cx + jx, cy + jy]
}

/// The points of `range`, flattened (`DIM` values each).
pub fn points(seed: u64, blobs: usize, range: Range<usize>) -> Vec<i64> {
    range.flat_map(|i| point(seed, blobs, i)).collect()
}
