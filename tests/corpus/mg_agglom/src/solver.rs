//! The multigrid hierarchy over one communicator, and the V-cycle.

use crate::coarse::{Agglomerator, Coarse};
use crate::grid::{jacobi, prolong_add, residual, restrict, tridiagonal_solve, Level};
use crate::halo::exchange;
use dist_runtime::prelude::*;

/// What happens at the bottom of a hierarchy.
pub enum Bottom {
    /// Gather the whole level on rank 0 of the communicator and solve exactly.
    Direct,
    /// Hand the level to the coarse group (leaders hold its hierarchy).
    Agglomerate { agg: Agglomerator, sub: Option<Box<Hierarchy<Coarse>>>, cycles: usize },
}

pub struct Hierarchy<G: Group> {
    comm: Comm<G>,
    pub levels: Vec<Level>,
    bottom: Bottom,
    nu: usize,
}

/// Coarsens `fine` over `comm` while every rank keeps at least `agg_min` points.
/// Collective over `comm` (one all_reduce per candidate level).
pub fn build_levels<G: Group>(comm: &Comm<G>, fine: Level, agg_min: usize) -> dist_runtime::Result<Vec<Level>> {
    let mut levels = vec![fine];
    loop {
        let cand = levels.last().unwrap().coarsen();
        if cand.m < 4 {
            break;
        }
        let mut fewest = [cand.count() as u64];
        comm.all_reduce(&mut fewest, ReduceOp::Min)?;
        if (fewest[0] as usize) < agg_min {
            break;
        }
        levels.push(cand);
    }
    Ok(levels)
}

impl<G: Group> Hierarchy<G> {
    pub fn new(comm: &Comm<G>, levels: Vec<Level>, bottom: Bottom, nu: usize) -> Hierarchy<G> {
        Hierarchy { comm: comm.clone(), levels, bottom, nu }
    }

    pub fn depth(&self) -> usize {
        self.levels.len()
            + match &self.bottom {
                Bottom::Agglomerate { sub: Some(s), .. } => s.depth() - 1,
                _ => 0,
            }
    }

    /// The residual 2-norm² summed over the communicator.
    pub fn residual_norm2(&self, u: &mut [f64], f: &[f64]) -> dist_runtime::Result<f64> {
        exchange(&self.comm, u)?;
        let r = residual(&self.levels[0], u, f);
        let mut s = [r[1..r.len() - 1].iter().map(|x| x * x).sum::<f64>()];
        self.comm.all_reduce(&mut s, ReduceOp::Sum)?;
        Ok(s[0])
    }

    /// One V-cycle from level `l` on A u = f.
    pub fn vcycle(&self, l: usize, u: &mut [f64], f: &[f64]) -> dist_runtime::Result<()> {
        if l + 1 == self.levels.len() {
            return self.solve_bottom(u, f);
        }
        let (fine, coarse) = (&self.levels[l], &self.levels[l + 1]);
        for _ in 0..self.nu {
            exchange(&self.comm, u)?;
            jacobi(fine, u, f);
        }
        exchange(&self.comm, u)?;
        let mut r = residual(fine, u, f);
        exchange(&self.comm, &mut r)?;
        let rc = restrict(fine, coarse, &r);
        let mut ec = coarse.zeros();
        self.vcycle(l + 1, &mut ec, &rc)?;
        exchange(&self.comm, &mut ec)?;
        prolong_add(fine, coarse, &ec, u);
        for _ in 0..self.nu {
            exchange(&self.comm, u)?;
            jacobi(fine, u, f);
        }
        Ok(())
    }

    fn solve_bottom(&self, u: &mut [f64], f: &[f64]) -> dist_runtime::Result<()> {
        match &self.bottom {
            Bottom::Direct => direct_solve(&self.comm, self.levels.last().unwrap(), u, f),
            Bottom::Agglomerate { agg, sub, cycles } => {
                let f_all = agg.gather(f)?;
                let mut u_all = None;
                if let (Some(sub), Some(f_all)) = (sub, f_all) {
                    let mut v = sub.levels[0].zeros();
                    for _ in 0..*cycles {
                        sub.vcycle(0, &mut v, &f_all)?;
                    }
                    u_all = Some(v);
                }
                agg.scatter(u_all.as_deref(), u)
            }
        }
    }
}

/// Gathers the level onto rank 0 of `comm`, solves it exactly, scatters the solution.
pub fn direct_solve<G: Group>(comm: &Comm<G>, lv: &Level, u: &mut [f64], f: &[f64]) -> dist_runtime::Result<()> {
    let mut counts64 = vec![0u64; comm.size()];
    comm.all_gather(&[lv.count() as u64], &mut counts64)?;
    let counts: Vec<usize> = counts64.iter().map(|&c| c as usize).collect();
    let n = lv.count();
    if comm.rank() == 0 {
        let mut rhs = vec![0.0; lv.m - 1];
        comm.gather_v(&f[1..=n], Some(&mut rhs[..]), &counts, 0)?;
        let sol = tridiagonal_solve(lv.m, &rhs);
        comm.scatter_v(Some(&sol[..]), &mut u[1..=n], &counts, 0)
    } else {
        comm.gather_v(&f[1..=n], None, &counts, 0)?;
        comm.scatter_v(None, &mut u[1..=n], &counts, 0)
    }
}
