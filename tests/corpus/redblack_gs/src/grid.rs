//! The process grid and each rank's block of the global mesh, with one ghost layer.

use dist_runtime::prelude::*;

dist_runtime::group!(pub RowComm);
dist_runtime::group!(pub ColComm);

/// `[lo, hi)` of `n` points for part `k` of `parts`.
pub fn span(n: usize, parts: usize, k: usize) -> (usize, usize) {
    let (q, r) = (n / parts, n % parts);
    let lo = k * q + k.min(r);
    (lo, lo + q + usize::from(k < r))
}

pub struct Placement {
    /// This rank's place in the process grid.
    pub prow: usize,
    pub pcol: usize,
    /// Ranks sharing `prow` (ordered by column) and ranks sharing `pcol` (by row).
    pub row: Comm<RowComm>,
    pub col: Comm<ColComm>,
}

impl Placement {
    pub fn new(world: &Comm<World>, px: usize, py: usize) -> dist_runtime::Result<Placement> {
        let (prow, pcol) = (world.rank() / py, world.rank() % py);
        debug_assert!(prow < px);
        let row = world.split::<RowComm>(prow as u32, pcol as i64)?;
        let col = world.split::<ColComm>(pcol as u32, prow as i64)?;
        Ok(Placement { prow, pcol, row, col })
    }
}

/// A block of the mesh: `rows × cols` owned points plus a ghost frame.
#[derive(Clone)]
pub struct Field {
    pub rows: usize,
    pub cols: usize,
    /// Global index of the first owned row and column.
    pub row0: usize,
    pub col0: usize,
    pub data: Vec<f64>,
}

impl Field {
    pub fn zeros(rows: usize, cols: usize, row0: usize, col0: usize) -> Field {
        Field { rows, cols, row0, col0, data: vec![0.0; (rows + 2) * (cols + 2)] }
    }
    #[inline]
    pub fn at(&self, i: usize, j: usize) -> f64 {
        self.data[i * (self.cols + 2) + j]
    }
    #[inline]
    pub fn set(&mut self, i: usize, j: usize, v: f64) {
        let w = self.cols + 2;
        self.data[i * w + j] = v;
    }
    /// Owned row `i` (1..=rows), without the ghost corners.
    pub fn row(&self, i: usize) -> Vec<f64> {
        let w = self.cols + 2;
        self.data[i * w + 1..i * w + 1 + self.cols].to_vec()
    }
    pub fn put_row(&mut self, i: usize, v: &[f64]) {
        let w = self.cols + 2;
        self.data[i * w + 1..i * w + 1 + self.cols].copy_from_slice(v);
    }
    pub fn column(&self, j: usize) -> Vec<f64> {
        (1..=self.rows).map(|i| self.at(i, j)).collect()
    }
    pub fn put_column(&mut self, j: usize, v: &[f64]) {
        for (i, &x) in (1..=self.rows).zip(v) {
            self.set(i, j, x);
        }
    }
    /// Owned points as (local i, local j, global i, global j).
    pub fn points(&self) -> impl Iterator<Item = (usize, usize, usize, usize)> + '_ {
        (1..=self.rows).flat_map(move |i| (1..=self.cols).map(move |j| (i, j, self.row0 + i - 1, self.col0 + j - 1)))
    }
}
