//! Transpose of a square matrix distributed by blocks of rows: rank q gets, from every
//! rank r, the part of r's rows that lies in q's columns.

use std::ops::Range;

/// Rows (and columns) owned by `rank`.
pub fn rows(side: usize, n: usize, rank: usize) -> Range<usize> {
    side * rank / n..side * (rank + 1) / n
}

pub fn entry(i: usize, j: usize) -> f64 {
    (i * 1000 + j) as f64 + 0.25
}

/// What `rank` sends: for each destination, its own rows restricted to that
/// destination's columns, row-major; and the count for each destination.
pub fn pack(side: usize, n: usize, rank: usize) -> (Vec<f64>, Vec<usize>) {
    let mine = rows(side, n, rank);
    let mut out = Vec::with_capacity(mine.len() * side);
    let mut counts = Vec::with_capacity(n);
    for q in 0..n {
        let cols = rows(side, n, q);
        counts.push(mine.len() * cols.len());
        out.extend(mine.clone().flat_map(|i| cols.clone().map(move |j| entry(i, j))));
    }
    (out, counts)
}

/// Builds `rank`'s rows of the transpose from the blocks received, in rank order.
pub fn unpack(side: usize, n: usize, rank: usize, recv: &[f64]) -> Vec<f64> {
    let cols = rows(side, n, rank);
    let mut t = vec![0.0; cols.len() * side];
    let mut at = 0;
    for q in 0..n {
        for i in rows(side, n, q) {
            for (jj, _) in cols.clone().enumerate() {
                t[jj * side + i] = recv[at];
                at += 1;
            }
        }
    }
    t
}

/// The serial reference: `rank`'s rows of the transpose.
pub fn expected(side: usize, n: usize, rank: usize) -> Vec<f64> {
    rows(side, n, rank).flat_map(|j| (0..side).map(move |i| entry(i, j))).collect()
}
