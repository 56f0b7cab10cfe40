//! Histogram sort: a global histogram of the keys picks which rank owns each
//! bin so every rank ends with about the same number of keys; then one personalised
//! all-to-all moves every key to its owner, and each rank sorts what it got.

use dist_runtime::prelude::*;

pub fn mix(mut h: u64) -> u64 {
    h ^= h >> 31;
    h = h.wrapping_mul(0x7FB5_D329_728E_A185);
    h ^= h >> 27;
    h = h.wrapping_mul(0x81DA_DEF4_BC2D_D44D);
    h ^ (h >> 33)
}

/// The keys rank `rank` starts with: skewed towards small values.
pub fn keys_of(rank: usize, per_rank: usize, seed: u64) -> Vec<u64> {
    (0..per_rank)
        .map(|i| {
            let h = mix(seed ^ mix((rank * per_rank + i) as u64));
            h >> (h & 3)
        })
        .collect()
}

/// `bins` equal ranges of key values; `owner[b]` is the rank that gets bin `b`'s keys
/// (non-decreasing in `b`).
pub struct Bins {
    owner: Vec<usize>,
}

/// The bin of `key` among `bins` equal ranges of `u64` (its top `log2(bins)` bits).
fn bin_of(key: u64, bins: usize) -> usize {
    (key >> (64 - bins.trailing_zeros())) as usize
}

impl Bins {
    /// Collective: sums the bins' counts over every rank and deals them out in order,
    /// a bin going to the rank whose share of the total its first key falls in.
    pub fn balance<G: Group>(comm: &Comm<G>, keys: &[u64], bins: usize) -> dist_runtime::Result<Bins> {
        let mut hist = vec![0u64; bins];
        for &k in keys {
            hist[bin_of(k, bins)] += 1;
        }
        comm.all_reduce(&mut hist, ReduceOp::Sum)?;
        let total: u64 = hist.iter().sum::<u64>().max(1);
        let n = comm.size() as u64;
        let mut before = 0u64;
        let owner = hist
            .iter()
            .map(|&h| {
                let o = (before * n / total).min(n - 1) as usize;
                before += h;
                o
            })
            .collect();
        Ok(Bins { owner })
    }

    pub fn owner_of(&self, key: u64) -> usize {
        self.owner[bin_of(key, self.owner.len())]
    }

    /// Sorts `keys` in place (owners are non-decreasing in the key, so each owner's
    /// keys end up contiguous) and returns how many go to each of `n` ranks.
    pub fn route(&self, keys: &mut [u64], n: usize) -> Vec<usize> {
        keys.sort_unstable();
        let mut counts = vec![0usize; n];
        for &k in keys.iter() {
            counts[self.owner_of(k)] += 1;
        }
        counts
    }
}
