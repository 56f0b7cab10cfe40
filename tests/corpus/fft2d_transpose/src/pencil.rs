//! The 2-D (pencil) decomposition on a `pr × pc` process mesh: process (pi, pj) owns
//! the rows `block(R, pr, pi)` and the columns `block(C, pc, pj)`.

use crate::dft::{dft_rows, input, transpose as local_transpose, C64};
use crate::layout::{block, block_len};
use crate::transpose::transpose;
use dist_runtime::prelude::*;

dist_runtime::group!(pub MeshRow);
dist_runtime::group!(pub MeshCol);

pub struct Pencil {
    /// The ranks of our process row (size pc), numbered by pj.
    row: Comm<MeshRow>,
    /// The ranks of our process column (size pr), numbered by pi.
    col: Comm<MeshCol>,
    pub rows: usize,
    pub cols: usize,
}

impl Pencil {
    pub fn new(world: &Comm<World>, pr: usize, pc: usize, rows: usize, cols: usize) -> dist_runtime::Result<Pencil> {
        let (col, row) = world.mesh2::<MeshCol, MeshRow>(pr, pc)?;
        Ok(Pencil { row, col, rows, cols })
    }

    fn coords(&self) -> (usize, usize) {
        (self.col.rank(), self.row.rank())
    }

    /// Our block's shape `(m, k)` and its offsets.
    pub fn block(&self) -> ((usize, usize), (usize, usize)) {
        let (pi, pj) = self.coords();
        (block(self.rows, self.col.size(), pi), block(self.cols, self.row.size(), pj))
    }

    pub fn local_input(&self) -> Vec<C64> {
        let ((r0, r1), (c0, c1)) = self.block();
        (r0..r1).flat_map(|i| (c0..c1).map(move |j| input(i, j))).collect()
    }

    /// The DFT along the rows of the grid: the row communicator's ranks hold an
    /// `m × C` matrix by column blocks, i.e. its transpose `C × m` by row blocks.
    fn along_rows(&self, local: &[C64]) -> dist_runtime::Result<Vec<C64>> {
        let ((r0, r1), (c0, c1)) = self.block();
        let (m, k) = (r1 - r0, c1 - c0);
        debug_assert_eq!(block_len(self.cols, self.row.size(), self.row.rank()), k);
        let t = local_transpose(local, m, k); // k × m: our rows of C × m
        let mut full_rows = transpose(&self.row, &t, self.cols, m)?; // our rows of m × C
        dft_rows(&mut full_rows, self.cols);
        let back = transpose(&self.row, &full_rows, m, self.cols)?; // k × m again
        Ok(local_transpose(&back, k, m))
    }

    /// The DFT along the columns: the column communicator's ranks hold `R × k` by
    /// row blocks; its transpose gives each a few whole columns.
    fn along_cols(&self, local: &[C64]) -> dist_runtime::Result<Vec<C64>> {
        let ((r0, r1), (c0, c1)) = self.block();
        let (m, k) = (r1 - r0, c1 - c0);
        assert_eq!(local.len(), m * k);
        let mut cols = transpose(&self.col, local, self.rows, k)?; // our rows of k × R
        dft_rows(&mut cols, self.rows);
        transpose(&self.col, &cols, k, self.rows)
    }

    pub fn forward(&self, local: Vec<C64>) -> dist_runtime::Result<Vec<C64>> {
        let rowed = self.along_rows(&local)?;
        self.along_cols(&rowed)
    }
}
