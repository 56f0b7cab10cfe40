//! The periodic px × py process grid: coordinates, neighbours, row and column
//! communicators, and the block of the global field this rank owns.

use dist_runtime::prelude::*;

dist_runtime::group!(pub RowComm);
dist_runtime::group!(pub ColComm);

/// Splits `n` points over `parts` blocks: (start, len) of block `k`.
pub fn block(n: usize, parts: usize, k: usize) -> (usize, usize) {
    let (q, r) = (n / parts, n % parts);
    (k * q + k.min(r), q + usize::from(k < r))
}

pub struct Topology {
    pub px: usize,
    pub py: usize,
    pub cx: usize,
    pub cy: usize,
    /// Ranks with the same `cy`, numbered by `cx`.
    pub row: Comm<RowComm>,
    /// Ranks with the same `cx`, numbered by `cy`.
    pub col: Comm<ColComm>,
}

impl Topology {
    pub fn new(world: &Comm<World>, px: usize, py: usize) -> dist_runtime::Result<Topology> {
        let r = world.rank();
        let (cx, cy) = (r % px, r / px);
        let row = world.split::<RowComm>(cy as u32, cx as i64)?;
        let col = world.split::<ColComm>(cx as u32, cy as i64)?;
        Ok(Topology { px, py, cx, cy, row, col })
    }

    pub fn east(&self) -> usize {
        (self.cx + 1) % self.px
    }

    pub fn west(&self) -> usize {
        (self.cx + self.px - 1) % self.px
    }

    pub fn north(&self) -> usize {
        (self.cy + 1) % self.py
    }

    pub fn south(&self) -> usize {
        (self.cy + self.py - 1) % self.py
    }

    /// (x0, lx, y0, ly) of this rank's block of an nx × ny field.
    pub fn my_block(&self, nx: usize, ny: usize) -> (usize, usize, usize, usize) {
        let (x0, lx) = block(nx, self.px, self.cx);
        let (y0, ly) = block(ny, self.py, self.cy);
        (x0, lx, y0, ly)
    }
}
