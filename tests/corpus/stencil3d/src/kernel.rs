//! 7-point Jacobi updates for -Δu = f and the sweep over a region of a block.

use crate::config::KernelKind;
use crate::grid::{Decomp, Field};
use std::ops::RangeInclusive;

pub trait Kernel {
    fn name(&self) -> &'static str;
    /// New value from the old one, the sum of the six neighbours and the source term.
    fn update(&self, centre: f64, neighbours: f64, source: f64) -> f64;
}

pub struct Jacobi { pub h2: f64 }
pub struct WeightedJacobi { pub h2: f64, pub omega: f64 }

impl Kernel for Jacobi {
    fn name(&self) -> &'static str { "jacobi" }
    fn update(&self, _c: f64, nb: f64, f: f64) -> f64 { (nb + self.h2 * f) / 6.0 }
}

impl Kernel for WeightedJacobi {
    fn name(&self) -> &'static str { "weighted-jacobi" }
    fn update(&self, c: f64, nb: f64, f: f64) -> f64 { (1.0 - self.omega) * c + self.omega * (nb + self.h2 * f) / 6.0 }
}

pub fn make_kernel(kind: KernelKind, n: usize) -> Box<dyn Kernel> {
    let h2 = (1.0 / (n as f64 + 1.0)).powi(2);
    match kind {
        KernelKind::Jacobi => Box::new(Jacobi { h2 }),
        KernelKind::Weighted(omega) => Box::new(WeightedJacobi { h2, omega }),
    }
}

/// The source term: a slab near the low x/y corner (the solution spreads from there).
pub fn source_field(d: &Decomp) -> Field {
    let mut f = Field::zeros(d.lx, d.ly, d.nz);
    for (i, j, k) in (1..=d.lx).flat_map(|i| (1..=d.ly).flat_map(move |j| (1..=d.nz).map(move |k| (i, j, k)))) {
        let (gx, gy, gz) = (d.x0 + i - 1, d.y0 + j - 1, k - 1);
        let inside = gx < d.nx.div_ceil(4) && gy < d.ny.div_ceil(4) && gz.abs_diff(d.nz / 2) <= 1;
        let c = f.idx(i, j, k);
        f.data[c] = if inside { 100.0 } else { 0.0 };
    }
    f
}

/// Updates `is × js × (1..=nz)` of `out` from `u`; returns the sum of squared changes.
pub fn sweep(k: &dyn Kernel, u: &Field, src: &Field, out: &mut Field, is: RangeInclusive<usize>, js: RangeInclusive<usize>) -> f64 {
    let (sj, si, d, mut sq) = (u.nz + 2, (u.ly + 2) * (u.nz + 2), &u.data, 0.0);
    for i in is {
        for j in js.clone() {
            for c in u.idx(i, j, 1)..=u.idx(i, j, u.nz) {
                let nb = d[c - si] + d[c + si] + d[c - sj] + d[c + sj] + d[c - 1] + d[c + 1];
                let v = k.update(d[c], nb, src.data[c]);
                sq += (v - d[c]) * (v - d[c]);
                out.data[c] = v;
            }
        }
    }
    sq
}
