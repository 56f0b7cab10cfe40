//! The rod: `n` interior points of [0, 1] with fixed temperatures at both ends, split
//! into contiguous slabs. A slab keeps one ghost cell on each side; on the physical
//! boundary the ghost holds the boundary value, elsewhere the neighbour's edge.

use std::f64::consts::PI;
use std::ops::Range;

pub const LEFT_BC: f64 = 1.0;
pub const RIGHT_BC: f64 = -0.5;

/// Heat source along the rod.
pub fn source(x: f64) -> f64 {
    8.0 * (3.0 * PI * x).sin() + 2.0
}

#[derive(Clone, Copy, Debug)]
pub struct Blocks {
    pub n: usize,
    pub parts: usize,
}

impl Blocks {
    pub fn range(&self, p: usize) -> Range<usize> {
        let (q, rem) = (self.n / self.parts, self.n % self.parts);
        let lo = p * q + p.min(rem);
        lo..lo + q + usize::from(p < rem)
    }

    pub fn counts(&self) -> Vec<usize> {
        (0..self.parts).map(|p| self.range(p).len()).collect()
    }
}

pub struct Slab {
    pub m: usize,
    /// `m` interior values with a ghost at each end.
    pub u: Vec<f64>,
    next: Vec<f64>,
    /// h² f at the interior points.
    rhs: Vec<f64>,
}

impl Slab {
    pub fn new(range: Range<usize>, n: usize) -> Slab {
        let h = 1.0 / (n + 1) as f64;
        let m = range.len();
        let mut u = vec![0.0; m + 2];
        if range.start == 0 {
            u[0] = LEFT_BC;
        }
        if range.end == n {
            u[m + 1] = RIGHT_BC;
        }
        let rhs = range.map(|i| h * h * source((i + 1) as f64 * h)).collect();
        Slab { m, next: u.clone(), u, rhs }
    }

    /// One Jacobi sweep of -u'' = f; returns the largest change of any point.
    pub fn sweep(&mut self) -> f64 {
        let mut worst = 0.0f64;
        for i in 1..=self.m {
            let v = 0.5 * (self.u[i - 1] + self.u[i + 1] + self.rhs[i - 1]);
            worst = worst.max((v - self.u[i]).abs());
            self.next[i] = v;
        }
        self.next[0] = self.u[0];
        self.next[self.m + 1] = self.u[self.m + 1];
        std::mem::swap(&mut self.u, &mut self.next);
        worst
    }

    pub fn interior(&self) -> &[f64] {
        &self.u[1..=self.m]
    }
}

/// The same iteration on the whole rod, with the same stopping rule as `Solver::run`.
pub fn serial_solve(n: usize, max_steps: usize, check_every: usize, tol: f64) -> (Vec<f64>, usize, f64) {
    let mut rod = Slab::new(0..n, n);
    let mut resid = f64::INFINITY;
    for step in 1..=max_steps {
        let change = rod.sweep();
        if step % check_every == 0 || step == max_steps {
            resid = change;
            if resid < tol {
                return (rod.interior().to_vec(), step, resid);
            }
        }
    }
    (rod.interior().to_vec(), max_steps, resid)
}
