//! Cannon's algorithm on the grid.

use dist_runtime::prelude::*;

use crate::blocks::{block, gemm_acc};
use crate::config::Config;
use crate::grid::Grid;

const A_BLOCK: Tag<f64> = Tag::new(1);
const B_BLOCK: Tag<f64> = Tag::new(2);

pub struct Cannon<'g> {
    grid: &'g Grid,
    pub nb: usize,
    a: Vec<f64>,
    b: Vec<f64>,
    pub c: Vec<f64>,
    pub multiply_adds: u64,
}

impl<'g> Cannon<'g> {
    pub fn new(grid: &'g Grid, cfg: &Config) -> Cannon<'g> {
        let nb = cfg.n.div_ceil(grid.q);
        let a = block(cfg.seed, 0, cfg.n, nb, grid.i, grid.j);
        let b = block(cfg.seed, 1, cfg.n, nb, grid.i, grid.j);
        Cannon { grid, nb, a, b, c: vec![0.0; nb * nb], multiply_adds: 0 }
    }

    /// A moves `by` places left along the row: to column j - by, from column j + by.
    fn shift_a(&mut self, by: usize) -> dist_runtime::Result<()> {
        let (q, j) = (self.grid.q, self.grid.j);
        let mut incoming = vec![0.0; self.a.len()];
        self.grid.row.sendrecv((j + q - by) % q, A_BLOCK, &self.a, (j + by) % q, &mut incoming)?;
        self.a = incoming;
        Ok(())
    }

    /// B moves `by` places up the column: to row i - by, from row i + by.
    fn shift_b(&mut self, by: usize) -> dist_runtime::Result<()> {
        let (q, i) = (self.grid.q, self.grid.i);
        let mut incoming = vec![0.0; self.b.len()];
        self.grid.col.sendrecv((i + q - by) % q, B_BLOCK, &self.b, (i + by) % q, &mut incoming)?;
        self.b = incoming;
        Ok(())
    }

    pub fn run(&mut self) -> dist_runtime::Result<()> {
        // Initial skew: row i of A left by i, column j of B up by j.
        if self.grid.i > 0 {
            self.shift_a(self.grid.i)?;
        }
        if self.grid.j > 0 {
            self.shift_b(self.grid.j)?;
        }
        for step in 0..self.grid.q {
            gemm_acc(&mut self.c, &self.a, &self.b, self.nb);
            self.multiply_adds += (self.nb * self.nb * self.nb) as u64;
            if step + 1 < self.grid.q {
                self.shift_a(1)?;
                self.shift_b(1)?;
            }
        }
        Ok(())
    }
}
