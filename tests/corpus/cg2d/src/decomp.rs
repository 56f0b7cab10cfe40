//! Block decomposition of the global mesh over a px × py process grid.

use dist_runtime::prelude::*;

dist_runtime::group!(pub(crate) ColComm);
dist_runtime::group!(pub(crate) RowComm);

/// The first index and length of block `i` of `n` points split over `p` parts.
pub fn block(n: usize, p: usize, i: usize) -> (usize, usize) {
    let base = n / p;
    let extra = n % p;
    let len = base + usize::from(i < extra);
    let start = i * base + i.min(extra);
    (start, len)
}

/// This rank's place in the process grid, with the communicators along each axis.
pub struct Decomp {
    pub world: Comm<World>,
    /// Ranks with the same x coordinate (a column of the process grid), ordered by iy.
    pub col: Comm<ColComm>,
    /// Ranks with the same y coordinate (a row of the process grid), ordered by ix.
    pub row: Comm<RowComm>,
    pub px: usize,
    pub py: usize,
    pub ix: usize,
    pub iy: usize,
    pub x0: usize,
    pub y0: usize,
    pub lnx: usize,
    pub lny: usize,
    pub nx: usize,
    pub ny: usize,
}

impl Decomp {
    pub fn new(world: &Comm<World>, nx: usize, ny: usize, px: usize, py: usize) -> dist_runtime::Result<Decomp> {
        // rank = iy * px + ix
        let (col, row) = world.mesh2::<ColComm, RowComm>(py, px)?;
        let (ix, iy) = (row.rank(), col.rank());
        let (x0, lnx) = block(nx, px, ix);
        let (y0, lny) = block(ny, py, iy);
        Ok(Decomp { world: world.clone(), col, row, px, py, ix, iy, x0, y0, lnx, lny, nx, ny })
    }

    /// Length of a local array with one ghost layer on every side.
    pub fn padded_len(&self) -> usize {
        (self.lnx + 2) * (self.lny + 2)
    }

    /// Index of local interior point (i, j), 0-based, in the padded array.
    #[inline]
    pub fn idx(&self, i: usize, j: usize) -> usize {
        (j + 1) * (self.lnx + 2) + (i + 1)
    }

    pub fn has_left(&self) -> bool {
        self.ix > 0
    }
    pub fn has_right(&self) -> bool {
        self.ix + 1 < self.px
    }
    pub fn has_down(&self) -> bool {
        self.iy > 0
    }
    pub fn has_up(&self) -> bool {
        self.iy + 1 < self.py
    }

    /// Number of interior points of every rank, by world rank (rank = iy * px + ix).
    pub fn counts(&self) -> Vec<usize> {
        (0..self.px * self.py)
            .map(|r| block(self.nx, self.px, r % self.px).1 * block(self.ny, self.py, r / self.px).1)
            .collect()
    }

    /// Copies the interior of a padded array out, row by row.
    pub fn interior(&self, u: &[f64]) -> Vec<f64> {
        (0..self.lny).flat_map(|j| (0..self.lnx).map(move |i| (i, j))).map(|(i, j)| u[self.idx(i, j)]).collect()
    }
}
