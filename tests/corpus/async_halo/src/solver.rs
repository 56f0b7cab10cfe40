//! One rank's block of the grid and the overlapped Jacobi sweep.

use crate::cli::Config;
use crate::decomp::Block;
use crate::halo::HaloExchange;
use crate::jacobi::{self, Outcome};
use dist_runtime::prelude::*;

pub struct Solver {
    comm: Comm<World>,
    pub block: Block,
    total_rows: usize,
    cols: usize,
    /// Owned rows with a ghost row above and below: (rows + 2) × cols.
    cur: Vec<f64>,
    next: Vec<f64>,
    /// Requests that were still in flight when the interior was done, summed.
    pub overlapped: usize,
}

impl Solver {
    pub fn new(comm: &Comm<World>, cfg: &Config) -> Result<Solver, String> {
        if cfg.rows < comm.size() {
            return Err(format!("{} rows cannot be shared by {} ranks", cfg.rows, comm.size()));
        }
        let block = Block::new(cfg.rows, comm.size(), comm.rank());
        let cols = cfg.cols;
        let mut cur = vec![0.0; (block.rows + 2) * cols];
        for k in 0..block.rows {
            cur[(k + 1) * cols..(k + 2) * cols].copy_from_slice(&jacobi::initial_row(block.first + k, cfg));
        }
        let next = cur.clone();
        Ok(Solver { comm: comm.clone(), block, total_rows: cfg.rows, cols, cur, next, overlapped: 0 })
    }

    /// The owned rows, without ghosts.
    pub fn owned(&self) -> &[f64] {
        &self.cur[self.cols..(self.block.rows + 1) * self.cols]
    }

    fn is_edge(&self, k: usize) -> bool {
        Block::is_edge_row(self.block.first + k, self.total_rows)
    }

    /// Relaxes local row `k` (0-based among the owned rows) of `cur` into `next`.
    fn relax(&mut self, k: usize) -> f64 {
        let c = self.cols;
        let edge = self.is_edge(k);
        // Local row k sits at buffer row k + 1.
        let (before, after) = self.cur.split_at((k + 1) * c);
        let above = &before[k * c..];
        let (row, below) = after.split_at(c);
        jacobi::relax_row(edge, above, row, &below[..c], &mut self.next[(k + 1) * c..(k + 2) * c])
    }

    /// One sweep: post the halo exchange, relax the rows that need no ghost while it is
    /// in flight, finish it, relax the first and last rows. Returns the local change.
    pub fn sweep(&mut self) -> dist_runtime::Result<f64> {
        let (c, rows) = (self.cols, self.block.rows);
        let mut change: f64 = 0.0;
        {
            let (ghost_above, rest) = self.cur.split_at_mut(c);
            let (owned, ghost_below) = rest.split_at_mut(rows * c);
            let owned: &[f64] = owned;
            let mut halo = HaloExchange::new(&self.comm, &self.block);
            halo.begin(owned, c, ghost_above, ghost_below)?;
            for k in 1..rows.saturating_sub(1) {
                let above = &owned[(k - 1) * c..k * c];
                let row = &owned[k * c..(k + 1) * c];
                let below = &owned[(k + 1) * c..(k + 2) * c];
                let edge = Block::is_edge_row(self.block.first + k, self.total_rows);
                let out = &mut self.next[(k + 1) * c..(k + 2) * c];
                change = change.max(jacobi::relax_row(edge, above, row, below, out));
            }
            self.overlapped += halo.in_flight();
            halo.end()?;
        }
        change = change.max(self.relax(0));
        if rows > 1 {
            change = change.max(self.relax(rows - 1));
        }
        std::mem::swap(&mut self.cur, &mut self.next);
        Ok(change)
    }

    /// Sweeps until converged or out of steps, testing the global change every
    /// `check_every` sweeps.
    pub fn run(&mut self, cfg: &Config) -> dist_runtime::Result<Outcome> {
        let mut out = Outcome { sweeps: 0, change: f64::INFINITY, converged: false };
        for sweep in 1..=cfg.steps {
            let local = self.sweep()?;
            out.sweeps = sweep;
            if sweep % cfg.check_every == 0 {
                let mut global = [local];
                self.comm.all_reduce(&mut global, ReduceOp::Max)?;
                out.change = global[0];
                if jacobi::should_stop(sweep, cfg, global[0]) {
                    out.converged = true;
                    break;
                }
            }
        }
        Ok(out)
    }
}
