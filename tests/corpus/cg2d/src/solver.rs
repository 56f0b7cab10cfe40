//! Conjugate gradient on the distributed 5-point Laplacian.

use crate::config::{Config, DotMode, HaloMode};
use crate::decomp::Decomp;
use dist_runtime::prelude::*;

/// Right-hand side at global point (gx, gy).
pub fn rhs(gx: usize, gy: usize) -> f64 {
    1.0 + ((gx * 7 + gy * 13) % 11) as f64 / 11.0
}

/// A distributed vector: a padded local block.
pub struct Field<'d> {
    pub d: &'d Decomp,
    pub v: Vec<f64>,
}

impl<'d> Field<'d> {
    pub fn zeros(d: &'d Decomp) -> Self {
        Field { d, v: vec![0.0; d.padded_len()] }
    }

    pub fn from_fn(d: &'d Decomp, f: impl Fn(usize, usize) -> f64) -> Self {
        let mut out = Field::zeros(d);
        for j in 0..d.lny {
            for i in 0..d.lnx {
                let k = d.idx(i, j);
                out.v[k] = f(d.x0 + i, d.y0 + j);
            }
        }
        out
    }

    fn points(&self) -> impl Iterator<Item = usize> + '_ {
        let d = self.d;
        (0..d.lny).flat_map(move |j| (0..d.lnx).map(move |i| d.idx(i, j)))
    }

    pub fn local_dot(&self, other: &Field) -> f64 {
        self.points().map(|k| self.v[k] * other.v[k]).sum()
    }

    /// self += a * x
    pub fn axpy(&mut self, a: f64, x: &Field) {
        let ks: Vec<usize> = self.points().collect();
        for k in ks {
            self.v[k] += a * x.v[k];
        }
    }

    /// self = x + b * self
    pub fn xpby(&mut self, x: &Field, b: f64) {
        let ks: Vec<usize> = self.points().collect();
        for k in ks {
            self.v[k] = x.v[k] + b * self.v[k];
        }
    }
}

/// Global dot product.
pub fn dot(d: &Decomp, mode: DotMode, a: &Field, b: &Field) -> dist_runtime::Result<f64> {
    let mut s = [a.local_dot(b)];
    match mode {
        DotMode::Flat => d.world.all_reduce(&mut s, ReduceOp::Sum)?,
        DotMode::TwoStage => {
            d.row.all_reduce(&mut s, ReduceOp::Sum)?;
            d.col.all_reduce(&mut s, ReduceOp::Sum)?;
        }
    }
    Ok(s[0])
}

/// y = A p, after refreshing p's ghosts.
pub fn apply(d: &Decomp, halo: HaloMode, p: &mut Field, y: &mut Field) -> dist_runtime::Result<()> {
    crate::halo::exchange(d, halo, &mut p.v)?;
    let w = d.lnx + 2;
    for j in 0..d.lny {
        for i in 0..d.lnx {
            let k = d.idx(i, j);
            y.v[k] = 4.0 * p.v[k] - p.v[k - 1] - p.v[k + 1] - p.v[k - w] - p.v[k + w];
        }
    }
    Ok(())
}

pub struct Outcome {
    pub x: Vec<f64>,
    pub iterations: usize,
    pub residual: f64,
}

pub fn cg(d: &Decomp, cfg: &Config) -> dist_runtime::Result<Outcome> {
    let b = Field::from_fn(d, rhs);
    let mut x = Field::zeros(d);
    let mut r = Field::from_fn(d, rhs);
    let mut p = Field::from_fn(d, rhs);
    let mut ap = Field::zeros(d);
    let bnorm = dot(d, cfg.dot, &b, &b)?.sqrt();
    let mut rr = dot(d, cfg.dot, &r, &r)?;
    let mut it = 0;
    while it < cfg.max_iter {
        apply(d, cfg.halo, &mut p, &mut ap)?;
        let pap = dot(d, cfg.dot, &p, &ap)?;
        let alpha = rr / pap;
        x.axpy(alpha, &p);
        r.axpy(-alpha, &ap);
        let rr_new = dot(d, cfg.dot, &r, &r)?;
        it += 1;
        if cfg.verbose && d.world.rank() == 0 && it % 10 == 0 {
            println!("iter {it:4}  |r|/|b| = {:.3e}", rr_new.sqrt() / bnorm);
        }
        if rr_new.sqrt() <= cfg.tol * bnorm {
            rr = rr_new;
            break;
        }
        p.xpby(&r, rr_new / rr);
        rr = rr_new;
    }
    Ok(Outcome { x: d.interior(&x.v), iterations: it, residual: rr.sqrt() / bnorm })
}
