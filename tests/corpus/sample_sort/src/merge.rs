//! Local pieces of sample sort: regular samples, bucket boundaries, k-way merge.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// `per` evenly spaced keys of a sorted run (`u64::MAX` for an empty run, so an
/// empty rank pushes the splitters up rather than down).
pub fn regular_samples(sorted: &[u64], per: usize) -> Vec<u64> {
    (0..per)
        .map(|i| sorted.get(i * sorted.len() / per).copied().unwrap_or(u64::MAX))
        .collect()
}

/// Splitter `j` is the first key of the `(j + 1)`-th share of the sorted samples.
pub fn pick_splitters(samples: &mut [u64], parts: usize) -> Vec<u64> {
    samples.sort_unstable();
    let per = samples.len() / parts.max(1);
    (1..parts).map(|j| samples[j * per]).collect()
}

/// Bucket `j` of `sorted` is `b[j]..b[j + 1]`: the keys in `[s[j - 1], s[j])`.
pub fn bucket_bounds(sorted: &[u64], splitters: &[u64]) -> Vec<usize> {
    std::iter::once(0)
        .chain(splitters.iter().map(|&s| sorted.partition_point(|&k| k < s)))
        .chain(std::iter::once(sorted.len()))
        .collect()
}

/// Merges sorted runs into one sorted vector.
pub fn merge_runs(runs: &[Vec<u64>]) -> Vec<u64> {
    let total: usize = runs.iter().map(Vec::len).sum();
    let mut out = Vec::with_capacity(total);
    let mut pos = vec![0usize; runs.len()];
    let mut heap: BinaryHeap<Reverse<(u64, usize)>> = runs
        .iter()
        .enumerate()
        .filter_map(|(j, run)| run.first().map(|&k| Reverse((k, j))))
        .collect();
    while let Some(Reverse((k, j))) = heap.pop() {
        out.push(k);
        pos[j] += 1;
        if let Some(&next) = runs[j].get(pos[j]) {
            heap.push(Reverse((next, j)));
        }
    }
    out
}

/// Splits `flat` into consecutive runs of the given lengths.
pub fn split_runs(flat: &[u64], lens: &[usize]) -> Vec<Vec<u64>> {
    let mut rest = flat;
    lens.iter()
        .map(|&c| {
            let (run, tail) = rest.split_at(c);
            rest = tail;
            run.to_vec()
        })
        .collect()
}
