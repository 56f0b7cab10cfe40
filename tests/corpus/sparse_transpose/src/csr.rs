//! Compressed sparse rows, a block distribution, and the serial reference.

use std::ops::Range;

/// Contiguous blocks of `n` items over `parts` owners; the first `n % parts` own one more.
#[derive(Debug, Clone, Copy)]
pub struct BlockDist {
    pub n: usize,
    pub parts: usize,
}

impl BlockDist {
    pub fn new(n: usize, parts: usize) -> Self {
        BlockDist { n, parts }
    }

    pub fn range(&self, p: usize) -> Range<usize> {
        let (base, extra) = (self.n / self.parts, self.n % self.parts);
        let start = p * base + p.min(extra);
        start..start + base + usize::from(p < extra)
    }

    pub fn owner(&self, i: usize) -> usize {
        let (base, extra) = (self.n / self.parts, self.n % self.parts);
        let big = extra * (base + 1);
        if i < big { i / (base + 1) } else { extra + (i - big) / base }
    }

    pub fn counts(&self) -> Vec<usize> {
        (0..self.parts).map(|p| self.range(p).len()).collect()
    }
}

/// A block of rows `first_row..first_row + nrows()` of a sparse matrix with `ncols` columns.
#[derive(Debug, Clone, PartialEq)]
pub struct Csr {
    pub first_row: usize,
    pub ncols: usize,
    pub row_ptr: Vec<usize>,
    pub col_idx: Vec<usize>,
    pub vals: Vec<f64>,
}

/// One nonzero with global coordinates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Entry {
    pub row: usize,
    pub col: usize,
    pub val: f64,
}

fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The nonzeros of row `i`: sorted, distinct columns, skewed towards low columns (so
/// the first owners of the transpose receive more than the last).
pub fn row_entries(i: usize, ncols: usize, nnz: usize, seed: u64) -> Vec<(usize, f64)> {
    let mut state = mix(seed ^ (i as u64).wrapping_mul(0xD6E8_FEB8_6659_FD93));
    let mut next = || {
        state = mix(state);
        state
    };
    let k = (next() % (2 * nnz as u64 + 1)) as usize;
    let mut cols: Vec<usize> = (0..k)
        .map(|_| {
            let u = (next() >> 11) as f64 / (1u64 << 53) as f64;
            ((u * u * ncols as f64) as usize).min(ncols - 1)
        })
        .collect();
    cols.sort_unstable();
    cols.dedup();
    cols.into_iter().map(|c| (c, ((next() % 2001) as f64 - 1000.0) / 64.0)).collect()
}

impl Csr {
    /// Rows `rows` of the generated matrix.
    pub fn generate(rows: Range<usize>, ncols: usize, nnz: usize, seed: u64) -> Self {
        let mut m = Csr { first_row: rows.start, ncols, row_ptr: vec![0], col_idx: Vec::new(), vals: Vec::new() };
        for i in rows {
            for (c, v) in row_entries(i, ncols, nnz, seed) {
                m.col_idx.push(c);
                m.vals.push(v);
            }
            m.row_ptr.push(m.col_idx.len());
        }
        m
    }

    /// Builds rows `first_row..first_row + nrows` from entries in any order.
    pub fn from_entries(first_row: usize, nrows: usize, ncols: usize, mut entries: Vec<Entry>) -> Self {
        entries.sort_by_key(|e| (e.row, e.col));
        let mut row_ptr = vec![0usize; nrows + 1];
        for e in &entries {
            row_ptr[e.row - first_row + 1] += 1;
        }
        for i in 0..nrows {
            row_ptr[i + 1] += row_ptr[i];
        }
        Csr {
            first_row,
            ncols,
            row_ptr,
            col_idx: entries.iter().map(|e| e.col).collect(),
            vals: entries.iter().map(|e| e.val).collect(),
        }
    }

    pub fn nrows(&self) -> usize {
        self.row_ptr.len() - 1
    }

    pub fn nnz(&self) -> usize {
        self.col_idx.len()
    }

    pub fn entries(&self) -> impl Iterator<Item = Entry> + '_ {
        (0..self.nrows()).flat_map(move |i| {
            (self.row_ptr[i]..self.row_ptr[i + 1]).map(move |k| Entry {
                row: self.first_row + i,
                col: self.col_idx[k],
                val: self.vals[k],
            })
        })
    }

    /// The serial transpose of a whole matrix (`first_row` must be 0).
    pub fn transpose(&self) -> Csr {
        let t = self.entries().map(|e| Entry { row: e.col, col: e.row, val: e.val }).collect();
        Csr::from_entries(0, self.ncols, self.first_row + self.nrows(), t)
    }

    /// `y = M x` for this block of rows.
    pub fn matvec(&self, x: &[f64]) -> Vec<f64> {
        (0..self.nrows())
            .map(|i| (self.row_ptr[i]..self.row_ptr[i + 1]).map(|k| self.vals[k] * x[self.col_idx[k]]).sum())
            .collect()
    }

    /// Rows `rows` of this (whole) matrix as a block.
    pub fn block(&self, rows: Range<usize>) -> Csr {
        let es = self.entries().filter(|e| rows.contains(&e.row)).collect();
        Csr::from_entries(rows.start, rows.len(), self.ncols, es)
    }
}

/// The x of product number `it`.
pub fn input_vector(len: usize, it: usize, seed: u64) -> Vec<f64> {
    (0..len).map(|i| ((mix(seed ^ ((it * 7919 + i) as u64)) % 1000) as f64 - 500.0) / 250.0).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_matches_range() {
        for parts in 1..9 {
            let d = BlockDist::new(1000, parts);
            for p in 0..parts {
                assert!(d.range(p).all(|i| d.owner(i) == p));
            }
        }
    }
}
