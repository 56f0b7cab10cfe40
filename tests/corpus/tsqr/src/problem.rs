//! The test problem: a tall matrix A and right-hand side b whose entries depend only on
//! the seed and the global row index, so every partition of the rows sees the same problem.

use std::ops::Range;

/// The rows `[lo, hi)` rank `rank` of `size` owns: contiguous blocks, the first `m % size`
/// ranks one row longer.
pub fn row_block(m: usize, size: usize, rank: usize) -> Range<usize> {
    let base = m / size;
    let extra = m % size;
    let lo = rank * base + rank.min(extra);
    let hi = lo + base + usize::from(rank < extra);
    lo..hi
}

fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A uniform number in [-1, 1) from (seed, i, j).
fn uniform(seed: u64, i: u64, j: u64) -> f64 {
    let h = splitmix64(seed ^ splitmix64(i.wrapping_mul(0x1000_0001).wrapping_add(j)));
    (h >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
}

/// The planted solution the right-hand side is built around.
pub fn x_true(k: usize) -> Vec<f64> {
    (0..k).map(|j| 1.0 + j as f64 / k as f64).collect()
}

/// Rows `rows` of [A | b], row-major with `k + 1` columns: A's k columns then b.
pub fn augmented_block(seed: u64, k: usize, rows: Range<usize>) -> Vec<f64> {
    let w = k + 1;
    let xt = x_true(k);
    let mut out = Vec::with_capacity(rows.len() * w);
    for i in rows {
        let mut dot = 0.0;
        for j in 0..k {
            let a = uniform(seed, i as u64, j as u64);
            // A little diagonal dominance on a leading block keeps A well conditioned.
            let a = if i % k == j { a + 2.0 } else { a };
            dot += a * xt[j];
            out.push(a);
        }
        let noise = 0.01 * uniform(seed.wrapping_add(1), i as u64, u64::MAX);
        out.push(dot + noise);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_cover_rows_once() {
        for m in [0, 1, 7, 10, 1001] {
            for size in 1..=9 {
                let mut next = 0;
                for r in 0..size {
                    let b = row_block(m, size, r);
                    assert_eq!(b.start, next);
                    next = b.end;
                }
                assert_eq!(next, m);
            }
        }
    }
}
