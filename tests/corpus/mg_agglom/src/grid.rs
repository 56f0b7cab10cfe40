//! One level of the 1-D grid: 2^k intervals on [0, 1], interior points 1..m-1, of which
//! a rank owns the contiguous range [lo, hi). Local arrays hold the owned points with a
//! halo cell on each side: index 0 is point lo-1, index len+1 is point hi.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Level {
    pub m: usize,
    pub lo: usize,
    pub hi: usize,
}

impl Level {
    /// The block partition of the fine grid over `size` ranks.
    pub fn block(m: usize, rank: usize, size: usize) -> Level {
        let pts = m - 1;
        Level { m, lo: 1 + rank * pts / size, hi: 1 + (rank + 1) * pts / size }
    }
    pub fn count(&self) -> usize {
        self.hi - self.lo
    }
    pub fn h2(&self) -> f64 {
        let h = 1.0 / self.m as f64;
        h * h
    }
    /// Coarse point j sits on fine point 2j; each rank keeps the coarse points whose
    /// fine point it owns, so restriction needs only the fine halo.
    pub fn coarsen(&self) -> Level {
        Level { m: self.m / 2, lo: self.lo.div_ceil(2), hi: self.hi.div_ceil(2) }
    }
    pub fn zeros(&self) -> Vec<f64> {
        vec![0.0; self.count() + 2]
    }
    /// Global coordinate of local index i.
    pub fn x(&self, i: usize) -> f64 {
        (self.lo + i - 1) as f64 / self.m as f64
    }
}

/// Weighted Jacobi sweep (ω = 2/3); `u` must have fresh halos.
pub fn jacobi(lv: &Level, u: &mut [f64], f: &[f64]) {
    let w = 2.0 / 3.0;
    let h2 = lv.h2();
    let old = u.to_vec();
    for i in 1..=lv.count() {
        u[i] = (1.0 - w) * old[i] + w * 0.5 * (h2 * f[i] + old[i - 1] + old[i + 1]);
    }
}

/// r = f − A u, with A u = (2u_i − u_{i−1} − u_{i+1}) / h²; `u` must have fresh halos.
pub fn residual(lv: &Level, u: &[f64], f: &[f64]) -> Vec<f64> {
    let h2 = lv.h2();
    let mut r = lv.zeros();
    for i in 1..=lv.count() {
        r[i] = f[i] - (2.0 * u[i] - u[i - 1] - u[i + 1]) / h2;
    }
    r
}

/// Full weighting onto the coarse level; `r` must have fresh halos.
pub fn restrict(fine: &Level, coarse: &Level, r: &[f64]) -> Vec<f64> {
    let mut rc = coarse.zeros();
    for j in coarse.lo..coarse.hi {
        let g = 2 * j - fine.lo + 1; // local index of fine point 2j
        rc[j - coarse.lo + 1] = 0.25 * (r[g - 1] + 2.0 * r[g] + r[g + 1]);
    }
    rc
}

/// u += P e (linear interpolation); `e` must have fresh halos.
pub fn prolong_add(fine: &Level, coarse: &Level, e: &[f64], u: &mut [f64]) {
    let at = |j: usize| e[j + 1 - coarse.lo];
    for g in fine.lo..fine.hi {
        let v = if g % 2 == 0 { at(g / 2) } else { 0.5 * (at((g - 1) / 2) + at((g + 1) / 2)) };
        u[g - fine.lo + 1] += v;
    }
}

/// Thomas algorithm for A u = f on all interior points of a grid with m intervals.
pub fn tridiagonal_solve(m: usize, f: &[f64]) -> Vec<f64> {
    let n = m - 1;
    let h2 = 1.0 / (m * m) as f64;
    let (mut c, mut d) = (vec![0.0; n], vec![0.0; n]);
    // rows: -u_{i-1} + 2 u_i - u_{i+1} = h² f_i
    for i in 0..n {
        let denom = 2.0 + if i > 0 { c[i - 1] } else { 0.0 };
        c[i] = -1.0 / denom;
        d[i] = (h2 * f[i] + if i > 0 { d[i - 1] } else { 0.0 }) / denom;
    }
    let mut u = vec![0.0; n];
    for i in (0..n).rev() {
        u[i] = d[i] - c[i] * if i + 1 < n { u[i + 1] } else { 0.0 };
    }
    u
}
