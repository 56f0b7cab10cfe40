//! Deterministic key generation (every rank can regenerate every rank's keys) and
//! small sequential helpers.

use crate::config::{Config, KeyDist};

/// xorshift64*: small, fast, deterministic.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// How many keys rank `r` starts with: not all equal, so counts really vary.
pub fn initial_count(cfg: &Config, r: usize) -> usize {
    cfg.per_rank + (r * 37) % (cfg.per_rank / 4 + 1)
}

/// The keys rank `r` starts with.
pub fn initial_keys(cfg: &Config, r: usize) -> Vec<u64> {
    let mut rng = Rng::new(cfg.seed ^ ((r as u64 + 1) << 32));
    (0..initial_count(cfg, r))
        .map(|_| {
            let x = rng.next_u64();
            match cfg.dist {
                KeyDist::Uniform => x >> 16,
                KeyDist::Skewed => {
                    if x % 10 < 8 {
                        1_000_000 + (x >> 40) % 5000
                    } else {
                        x >> 20
                    }
                }
                KeyDist::Duplicates => x % 17,
            }
        })
        .collect()
}

/// Median of a sorted slice (lower median), or None when empty.
pub fn median(sorted: &[u64]) -> Option<u64> {
    if sorted.is_empty() {
        None
    } else {
        Some(sorted[(sorted.len() - 1) / 2])
    }
}

/// Merges two sorted vectors.
pub fn merge(a: &[u64], b: &[u64]) -> Vec<u64> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i] <= b[j] {
            out.push(a[i]);
            i += 1;
        } else {
            out.push(b[j]);
            j += 1;
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

/// The serial reference: every rank's keys, sorted.
pub fn serial_sorted(cfg: &Config, n: usize) -> Vec<u64> {
    let mut all: Vec<u64> = (0..n).flat_map(|r| initial_keys(cfg, r)).collect();
    all.sort_unstable();
    all
}
