//! Flat-parameter bookkeeping: padding to a multiple of the world size and the slice
//! each rank owns.

/// Elements per rank once `numel` is padded up to a multiple of `ranks`.
pub fn shard_len(numel: usize, ranks: usize) -> usize {
    numel.div_ceil(ranks)
}

pub fn padded_len(numel: usize, ranks: usize) -> usize {
    shard_len(numel, ranks) * ranks
}

/// The part of `0..numel` that `rank` owns (empty or short for the last ranks).
pub fn owned_range(numel: usize, ranks: usize, rank: usize) -> std::ops::Range<usize> {
    let len = shard_len(numel, ranks);
    let lo = (rank * len).min(numel);
    lo..(lo + len).min(numel)
}

/// `full` padded with zeros to `padded_len`.
pub fn pad(mut full: Vec<f64>, ranks: usize) -> Vec<f64> {
    let n = padded_len(full.len(), ranks);
    full.resize(n, 0.0);
    full
}

/// Rows of the global batch that `rank` trains on.
pub fn batch_rows(rows: usize, ranks: usize, rank: usize) -> std::ops::Range<usize> {
    let (base, extra) = (rows / ranks, rows % ranks);
    let lo = rank * base + rank.min(extra);
    lo..lo + base + usize::from(rank < extra)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_cover_the_parameters() {
        for numel in [1, 7, 77, 84] {
            for ranks in 1..9 {
                let total: usize = (0..ranks).map(|r| owned_range(numel, ranks, r).len()).sum();
                assert_eq!(total, numel);
                assert!(padded_len(numel, ranks) >= numel);
            }
        }
    }
}
