//! The input: `n` pseudo-random keys in contiguous blocks over the ranks. Key `i`
//! depends on the seed and `i` only, so rank 0 can rebuild the whole input.

use std::ops::Range;

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
}

/// splitmix64.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Keys in `0..span`; a small span gives many duplicates, which the splitters must
/// survive. Every 5th key is drawn from the low tenth of the span (a skewed input).
pub fn key(seed: u64, span: u64, i: usize) -> u64 {
    let h = mix(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ i as u64);
    if i % 5 == 0 {
        h % (span / 10).max(1)
    } else {
        h % span.max(1)
    }
}

pub fn keys(seed: u64, span: u64, range: Range<usize>) -> Vec<u64> {
    range.map(|i| key(seed, span, i)).collect()
}
