//! The distributed least-squares solver.

use std::error::Error;
use std::ops::Range;
use std::time::Instant;

use dist_runtime::prelude::*;

use crate::cli::Config;
use crate::{linalg, problem, tsqr};

/// Rank that ends the tree with the global R and solves for x.
const ROOT: usize = 0;

/// Relative agreement required between the TSQR and the serial solution.
const TOLERANCE: f64 = 1e-9;

pub struct Solver {
    world: Comm<World>,
    cfg: Config,
}

/// What one solve produced.
pub struct Solution {
    pub x: Vec<f64>,
    pub residual_sq: f64,
}

impl Solver {
    pub fn new(world: Comm<World>, cfg: Config) -> Solver {
        Solver { world, cfg }
    }

    fn width(&self) -> usize {
        self.cfg.cols + 1
    }

    /// The global rows this rank owns.
    fn my_rows(&self) -> Range<usize> {
        problem::row_block(self.cfg.rows, self.world.size(), self.world.rank())
    }

    pub fn run(&self) -> Result<(), Box<dyn Error>> {
        let started = Instant::now();
        let rows = self.my_rows();
        let nrows = rows.len();
        let block = problem::augmented_block(self.cfg.seed, self.cfg.cols, rows.clone());
        if self.cfg.verbose {
            println!("rows {}..{} ({} rows)", rows.start, rows.end, nrows);
        }

        let solution = self.solve(&block, nrows)?;
        let counts = self.row_counts(nrows)?;

        if let Some(counts) = counts {
            println!("rows per rank: {counts:?}");
            println!(
                "x = {:?}\n||Ax - b||^2 = {:.6e} ({} ranks, {:.1} ms)",
                solution.x,
                solution.residual_sq,
                self.world.size(),
                started.elapsed().as_secs_f64() * 1e3
            );
            self.verify(&solution, &counts)?;
        }
        Ok(())
    }

    /// TSQR: local factor, tree reduction, root solve, broadcast, residual.
    pub fn solve(&self, block: &[f64], nrows: usize) -> Result<Solution, Box<dyn Error>> {
        let (k, w) = (self.cfg.cols, self.width());
        let local_r = linalg::householder_r(block, nrows, w);
        let global_r = tsqr::tree_reduce_r(&self.world, local_r, k, self.cfg.verbose)?;

        let mut x = vec![0.0; k];
        if let Some(r) = global_r {
            // R = [R_A  Q^T b; 0  rho]: solve R_A x = Q^T b.
            let qtb: Vec<f64> = (0..k).map(|i| r[i * w + k]).collect();
            x = linalg::back_substitute(&r, w, k, &qtb)?;
            if self.cfg.verbose {
                println!("root: |rho|^2 = {:.6e}", r[k * w + k].powi(2));
            }
        }
        self.world.broadcast(&mut x, ROOT)?;

        let residual_sq = self.residual(block, &x)?;
        Ok(Solution { x, residual_sq })
    }

    /// ||A x - b||^2 over all ranks' rows.
    fn residual(&self, block: &[f64], x: &[f64]) -> dist_runtime::Result<f64> {
        let mut acc = [linalg::residual_sq(block, self.cfg.cols, x)];
        self.world.all_reduce(&mut acc, ReduceOp::Sum)?;
        Ok(acc[0])
    }

    /// Every rank's row count, on the root.
    fn row_counts(&self, nrows: usize) -> dist_runtime::Result<Option<Vec<u64>>> {
        let mine = [nrows as u64];
        if self.world.rank() == ROOT {
            let mut all = vec![0u64; self.world.size()];
            self.world.gather(&mine, Some(&mut all[..]), ROOT)?;
            Ok(Some(all))
        } else {
            self.world.gather(&mine, None, ROOT)?;
            Ok(None)
        }
    }

    /// Compare with the serial least-squares solution of the whole problem (root only).
    fn verify(&self, solution: &Solution, counts: &[u64]) -> Result<(), Box<dyn Error>> {
        let k = self.cfg.cols;
        let total: u64 = counts.iter().sum();
        if total != self.cfg.rows as u64 {
            return Err(format!("row counts {counts:?} add up to {total}, not {}", self.cfg.rows).into());
        }
        let whole = problem::augmented_block(self.cfg.seed, k, 0..self.cfg.rows);
        let serial_x = linalg::normal_equations(&whole, k)?;
        let serial_res = linalg::residual_sq(&whole, k, &serial_x);
        let dx = linalg::rel_diff(&solution.x, &serial_x);
        let dres = (solution.residual_sq - serial_res).abs() / serial_res.max(1e-300);
        if dx <= TOLERANCE && dres <= 1e-6 {
            println!("OK: x matches the serial solution (max rel diff {dx:.2e}, residual rel diff {dres:.2e})");
            Ok(())
        } else {
            Err(format!(
                "MISMATCH: x differs from the serial solution by {dx:.2e} (tolerance {TOLERANCE:e}), \
                 residual by {dres:.2e}\n  tsqr:   {:?}\n  serial: {serial_x:?}",
                solution.x
            )
            .into())
        }
    }
}
