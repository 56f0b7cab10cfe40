//! Conjugate gradients on distributed vectors, and the same algorithm on plain slices.

use crate::dist_vec::DistVector;
use crate::poisson::{apply_serial, Laplacian1d};

#[derive(Clone, Debug)]
pub struct SolverConfig {
    /// Stop once ‖r‖ ≤ tol · ‖b‖.
    pub tol: f64,
    pub max_iter: usize,
    /// Rank 0 prints the residual every `log_every` iterations (0: never).
    pub log_every: usize,
}

impl Default for SolverConfig {
    fn default() -> Self {
        SolverConfig { tol: 1e-10, max_iter: 10_000, log_every: 0 }
    }
}

impl SolverConfig {
    pub fn tol(mut self, tol: f64) -> Self {
        self.tol = tol;
        self
    }

    pub fn max_iter(mut self, max_iter: usize) -> Self {
        self.max_iter = max_iter;
        self
    }

    pub fn log_every(mut self, every: usize) -> Self {
        self.log_every = every;
        self
    }
}

#[derive(Debug, Clone, Copy)]
pub struct SolveStats {
    pub iters: usize,
    pub rel_residual: f64,
    pub converged: bool,
}

pub struct Solver {
    op: Laplacian1d,
    cfg: SolverConfig,
    is_root: bool,
}

impl Solver {
    pub fn new(op: Laplacian1d, cfg: SolverConfig, is_root: bool) -> Self {
        Solver { op, cfg, is_root }
    }

    /// Solve A x = b, starting from the `x` given.
    pub fn solve(&self, b: &DistVector, x: &mut DistVector) -> dist_runtime::Result<SolveStats> {
        let mut r = b.clone();
        let mut ap = b.clone();
        self.op.apply(x, &mut ap)?;
        r.axpy(-1.0, &ap);
        let mut p = r.clone();
        let b_norm = b.norm()?;
        let mut rr = r.dot(&r)?;
        if self.cfg.log_every > 0 && self.is_root {
            println!("cg: n={} |b|={b_norm:.3e} |r0|={:.3e}", b.layout.n, rr.sqrt());
        }
        let target = self.cfg.tol * b_norm;
        let mut iters = 0;
        while iters < self.cfg.max_iter && rr.sqrt() > target {
            self.op.apply(&p, &mut ap)?;
            let alpha = rr / p.dot(&ap)?;
            x.axpy(alpha, &p);
            r.axpy(-alpha, &ap);
            let rr_new = r.dot(&r)?;
            p.xpby(&r, rr_new / rr);
            rr = rr_new;
            iters += 1;
            if self.cfg.log_every > 0 && iters % self.cfg.log_every == 0 && self.is_root {
                println!("cg: iter {iters:>5}  |r|/|b| = {:.3e}", rr.sqrt() / b_norm);
            }
        }
        Ok(SolveStats { iters, rel_residual: rr.sqrt() / b_norm, converged: rr.sqrt() <= target })
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Textbook CG on one process, the reference for the distributed solve.
pub fn solve_serial(b: &[f64], cfg: &SolverConfig) -> (Vec<f64>, SolveStats) {
    let n = b.len();
    let mut x = vec![0.0; n];
    let mut r = b.to_vec();
    let mut p = r.clone();
    let b_norm = dot(b, b).sqrt();
    let mut rr = dot(&r, &r);
    let target = cfg.tol * b_norm;
    let mut iters = 0;
    while iters < cfg.max_iter && rr.sqrt() > target {
        let ap = apply_serial(&p);
        let alpha = rr / dot(&p, &ap);
        x.iter_mut().zip(&p).for_each(|(xi, pi)| *xi += alpha * pi);
        r.iter_mut().zip(&ap).for_each(|(ri, ai)| *ri -= alpha * ai);
        let rr_new = dot(&r, &r);
        let beta = rr_new / rr;
        p.iter_mut().zip(&r).for_each(|(pi, ri)| *pi = ri + beta * *pi);
        rr = rr_new;
        iters += 1;
    }
    (x, SolveStats { iters, rel_residual: rr.sqrt() / b_norm, converged: rr.sqrt() <= target })
}
