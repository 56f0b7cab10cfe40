//! The 1-D (slab) decomposition: rows in blocks over the whole world.

use crate::dft::{dft_rows, input, C64};
use crate::layout::block;
use crate::transpose::transpose;
use dist_runtime::prelude::*;

pub struct Slab {
    pub world: Comm<World>,
    pub rows: usize,
    pub cols: usize,
}

impl Slab {
    pub fn new(world: &Comm<World>, rows: usize, cols: usize) -> Slab {
        Slab { world: world.clone(), rows, cols }
    }

    pub fn my_rows(&self) -> (usize, usize) {
        block(self.rows, self.world.size(), self.world.rank())
    }

    pub fn local_input(&self) -> Vec<C64> {
        let (r0, r1) = self.my_rows();
        (r0..r1).flat_map(|i| (0..self.cols).map(move |j| input(i, j))).collect()
    }

    /// The 2-D DFT of the grid: rows, transpose, rows (the original columns), back.
    pub fn forward(&self, mut local: Vec<C64>) -> dist_runtime::Result<Vec<C64>> {
        dft_rows(&mut local, self.cols);
        let mut t = transpose(&self.world, &local, self.rows, self.cols)?;
        dft_rows(&mut t, self.rows);
        transpose(&self.world, &t, self.cols, self.rows)
    }

    /// Collect the whole result on rank 0.
    pub fn gather(&self, local: &[C64]) -> dist_runtime::Result<Option<Vec<C64>>> {
        let n = self.world.size();
        let counts: Vec<usize> = (0..n)
            .map(|r| {
                let (a, b) = block(self.rows, n, r);
                (b - a) * self.cols
            })
            .collect();
        if self.world.rank() == 0 {
            let mut all = vec![C64::new(0.0, 0.0); self.rows * self.cols];
            self.world.gather_v(local, Some(&mut all), &counts, 0)?;
            Ok(Some(all))
        } else {
            self.world.gather_v(local, None, &counts, 0)?;
            Ok(None)
        }
    }
}
