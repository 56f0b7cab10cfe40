//! Red-black Gauss-Seidel for -Δu = f on the unit square (u = 0 on the boundary), on
//! the blocks of a process grid, and the same iteration on one process for checking.

use crate::grid::{span, Field, Placement};
use dist_runtime::prelude::*;

const EAST_WEST: Tag<f64> = Tag::new(1);
const NORTH_SOUTH: Tag<f64> = Tag::new(2);

#[derive(Debug, Clone, Copy)]
pub struct Problem {
    pub nx: usize,
    pub ny: usize,
}

impl Problem {
    pub fn h(&self) -> f64 {
        1.0 / (self.nx.max(self.ny) + 1) as f64
    }
    /// The right-hand side at global interior point (gi, gj).
    pub fn rhs(&self, gi: usize, gj: usize) -> f64 {
        let h = self.h();
        let (x, y) = ((gi + 1) as f64 * h, (gj + 1) as f64 * h);
        let pi = std::f64::consts::PI;
        2.0 * pi * pi * (pi * x).sin() * (pi * y).sin() + 4.0 * x * (1.0 - y)
    }
}

#[inline]
fn relax(u: &Field, f: &Field, i: usize, j: usize, h2: f64) -> f64 {
    (h2 * f.at(i, j) + u.at(i - 1, j) + u.at(i + 1, j) + u.at(i, j - 1) + u.at(i, j + 1)) * 0.25
}

#[inline]
fn residual_at(u: &Field, f: &Field, i: usize, j: usize, h2: f64) -> f64 {
    f.at(i, j) + (u.at(i - 1, j) + u.at(i + 1, j) + u.at(i, j - 1) + u.at(i, j + 1) - 4.0 * u.at(i, j)) / h2
}

fn sweep(u: &mut Field, f: &Field, color: usize, h2: f64) {
    for i in 1..=u.rows {
        for j in 1..=u.cols {
            if (u.row0 + i + u.col0 + j) % 2 == color {
                let v = relax(u, f, i, j, h2);
                u.set(i, j, v);
            }
        }
    }
}

fn local_residual2(u: &Field, f: &Field, h2: f64) -> f64 {
    u.points().map(|(i, j, _, _)| residual_at(u, f, i, j, h2).powi(2)).sum()
}

pub struct Solver {
    place: Placement,
    pub u: Field,
    f: Field,
    h2: f64,
    h: f64,
}

impl Solver {
    pub fn new(place: Placement, prob: Problem, px: usize, py: usize) -> Solver {
        let (r0, r1) = span(prob.nx, px, place.prow);
        let (c0, c1) = span(prob.ny, py, place.pcol);
        let u = Field::zeros(r1 - r0, c1 - c0, r0, c0);
        let mut f = u.clone();
        let pts: Vec<_> = f.points().collect();
        for (i, j, gi, gj) in pts {
            f.set(i, j, prob.rhs(gi, gj));
        }
        let h = prob.h();
        Solver { place, u, f, h2: h * h, h }
    }

    /// Fills the ghost frame from the four neighbours; sides on the domain boundary
    /// keep their zeros.
    fn exchange_halo(&mut self) -> dist_runtime::Result<()> {
        let (row, col) = (&self.place.row, &self.place.col);
        let (c, nc) = (row.rank(), row.size());
        let mut ghost = vec![0.0; self.u.rows];
        if c > 0 {
            row.sendrecv(c - 1, EAST_WEST, &self.u.column(1), c - 1, &mut ghost)?;
            self.u.put_column(0, &ghost);
        }
        if c + 1 < nc {
            row.sendrecv(c + 1, EAST_WEST, &self.u.column(self.u.cols), c + 1, &mut ghost)?;
            self.u.put_column(self.u.cols + 1, &ghost);
        }

        let (r, nr) = (col.rank(), col.size());
        let (north_out, south_out) = (self.u.row(1), self.u.row(self.u.rows));
        let mut north_in = vec![0.0; self.u.cols];
        let mut south_in = vec![0.0; self.u.cols];
        let mut pending = Vec::with_capacity(4);
        if r > 0 {
            pending.push(col.irecv(r - 1, NORTH_SOUTH, &mut north_in)?);
            pending.push(col.isend(r - 1, NORTH_SOUTH, &north_out)?);
        }
        if r + 1 < nr {
            pending.push(col.irecv(r + 1, NORTH_SOUTH, &mut south_in)?);
            pending.push(col.isend(r + 1, NORTH_SOUTH, &south_out)?);
        }
        dist_runtime::wait_all(pending)?;
        if r > 0 {
            self.u.put_row(0, &north_in);
        }
        if r + 1 < nr {
            self.u.put_row(self.u.rows + 1, &south_in);
        }
        Ok(())
    }

    /// The discrete L2 norm of the residual over the whole mesh: summed along the
    /// process row, then along the process column.
    fn residual_norm(&self) -> dist_runtime::Result<f64> {
        let mut s = [local_residual2(&self.u, &self.f, self.h2)];
        self.place.row.all_reduce(&mut s, ReduceOp::Sum)?;
        self.place.col.all_reduce(&mut s, ReduceOp::Sum)?;
        Ok(s[0].sqrt() * self.h)
    }

    /// Iterates until the residual falls by `tol` or `max_it` sweeps; returns the
    /// number of iterations and the final relative residual.
    pub fn solve(&mut self, tol: f64, max_it: usize, verbose: bool) -> dist_runtime::Result<(usize, f64)> {
        self.exchange_halo()?;
        let r0 = self.residual_norm()?;
        let mut res = 1.0;
        let mut it = 0;
        while res > tol && it < max_it {
            sweep(&mut self.u, &self.f, 0, self.h2);
            self.exchange_halo()?;
            sweep(&mut self.u, &self.f, 1, self.h2);
            self.exchange_halo()?;
            res = self.residual_norm()? / r0;
            it += 1;
            if verbose && it % 200 == 0 && self.place.row.rank() == 0 && self.place.col.rank() == 0 {
                println!("iteration {it}: relative residual {res:.3e}");
            }
        }
        Ok((it, res))
    }
}

/// The same iteration on the whole mesh.
pub fn serial_solve(prob: Problem, tol: f64, max_it: usize) -> (Field, usize) {
    let mut u = Field::zeros(prob.nx, prob.ny, 0, 0);
    let mut f = u.clone();
    for gi in 0..prob.nx {
        for gj in 0..prob.ny {
            f.set(gi + 1, gj + 1, prob.rhs(gi, gj));
        }
    }
    let h2 = prob.h() * prob.h();
    let r0 = local_residual2(&u, &f, h2).sqrt();
    let mut res = 1.0;
    let mut it = 0;
    while res > tol && it < max_it {
        sweep(&mut u, &f, 0, h2);
        sweep(&mut u, &f, 1, h2);
        res = local_residual2(&u, &f, h2).sqrt() / r0;
        it += 1;
    }
    (u, it)
}
