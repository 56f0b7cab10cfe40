//! The distributed Jacobi solver: halo exchange, sweep, and every few steps the
//! global largest change (a MAX all_reduce, exact in any order) for the stopping test.

use dist_runtime::prelude::*;

use crate::grid::{Blocks, Slab};
use crate::halo::Halo;

pub struct Solver {
    comm: Comm<World>,
    blocks: Blocks,
    halo: Halo,
    pub slab: Slab,
    /// Global residual at every check.
    pub history: Vec<f64>,
}

impl Solver {
    pub fn new(world: &Comm<World>, n: usize) -> Solver {
        let blocks = Blocks { n, parts: world.size() };
        let slab = Slab::new(blocks.range(world.rank()), n);
        Solver { comm: world.clone(), blocks, halo: Halo::new(world), slab, history: Vec::new() }
    }

    /// Sweeps until the largest change anywhere falls below `tol` (tested every
    /// `check_every` steps and after the last) or `max_steps`; returns the steps
    /// taken and the last global residual.
    pub fn run(&mut self, max_steps: usize, check_every: usize, tol: f64) -> dist_runtime::Result<(usize, f64)> {
        let mut resid = f64::INFINITY;
        for step in 1..=max_steps {
            self.halo.exchange(&mut self.slab.u)?;
            let local = self.slab.sweep();
            if step % check_every == 0 || step == max_steps {
                let mut worst = [local];
                self.comm.all_reduce(&mut worst, ReduceOp::Max)?;
                resid = worst[0];
                self.history.push(resid);
                if resid < tol {
                    return Ok((step, resid));
                }
            }
        }
        Ok((max_steps, resid))
    }

    /// The whole rod's interior on `root`, in order (`Some` there only).
    pub fn gather(&self, root: usize) -> dist_runtime::Result<Option<Vec<f64>>> {
        let counts = self.blocks.counts();
        if self.comm.rank() == root {
            let mut all = vec![0.0; self.blocks.n];
            self.comm.gather_v(self.slab.interior(), Some(&mut all[..]), &counts, root)?;
            Ok(Some(all))
        } else {
            self.comm.gather_v(self.slab.interior(), None, &counts, root)?;
            Ok(None)
        }
    }

    pub fn messages(&self) -> usize {
        self.halo.sent
    }
}
