//! LU with partial pivoting on a column-cyclic layout: column j lives on rank j % p.
//! The right-hand side is replicated and updated identically everywhere.

use crate::matrix::System;
use dist_runtime::prelude::*;
use std::fmt;

#[derive(Debug)]
pub enum SolveError {
    Comm(dist_runtime::Error),
    Singular { column: usize },
}

impl fmt::Display for SolveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SolveError::Comm(e) => write!(f, "communication failed: {e}"),
            SolveError::Singular { column } => write!(f, "matrix is singular at column {column}"),
        }
    }
}

impl std::error::Error for SolveError {}

impl From<dist_runtime::Error> for SolveError {
    fn from(e: dist_runtime::Error) -> Self {
        SolveError::Comm(e)
    }
}

/// (|value|, row) pairs: keep the larger magnitude, the lower row on a tie (MPI_MAXLOC).
fn maxloc(acc: &mut [f64], x: &[f64]) {
    for (a, b) in acc.chunks_exact_mut(2).zip(x.chunks_exact(2)) {
        if b[0] > a[0] || (b[0] == a[0] && b[1] < a[1]) {
            a.copy_from_slice(b);
        }
    }
}

pub struct DistLu {
    comm: Comm<World>,
    n: usize,
    /// Global indices of the columns held here, ascending.
    cols: Vec<usize>,
    /// The held columns, one after another: `local[c * n + i]` is A[i][cols[c]].
    local: Vec<f64>,
    b: Vec<f64>,
    /// Pivot row chosen for each column (the same on every rank).
    pub pivots: Vec<usize>,
}

impl DistLu {
    pub fn new(comm: Comm<World>, sys: &System) -> DistLu {
        let (r, p) = (comm.rank(), comm.size());
        let cols: Vec<usize> = (r..sys.n).step_by(p).collect();
        let local = cols.iter().flat_map(|&j| sys.column(j)).collect();
        DistLu { comm, n: sys.n, cols, local, b: sys.b.clone(), pivots: Vec::with_capacity(sys.n) }
    }

    pub fn local_columns(&self) -> usize {
        self.cols.len()
    }

    fn owner(&self, k: usize) -> usize {
        k % self.comm.size()
    }

    /// Where column k sits in `local`, if this rank holds it.
    fn slot(&self, k: usize) -> Option<usize> {
        self.cols.binary_search(&k).ok()
    }

    /// This rank's best pivot candidate for column k as (|a_ik|, i); ranks without the
    /// column offer (-1, 0), which never wins.
    fn candidate(&self, k: usize) -> [f64; 2] {
        let n = self.n;
        match self.slot(k) {
            Some(c) => {
                let col = &self.local[c * n..(c + 1) * n];
                let (row, val) = (k..n)
                    .map(|i| (i, col[i].abs()))
                    .fold((k, -1.0), |best, cur| if cur.1 > best.1 { cur } else { best });
                [val, row as f64]
            }
            None => [-1.0, 0.0],
        }
    }

    pub fn factor(&mut self) -> Result<(), SolveError> {
        let n = self.n;
        for k in 0..n {
            let owner = self.owner(k);
            let mut best = self.candidate(k);
            self.comm.all_reduce(&mut best, ReduceOp::user_items("maxloc", 2, maxloc))?;
            if best[0] == 0.0 {
                return Err(SolveError::Singular { column: k });
            }
            let piv = best[1] as usize;
            self.pivots.push(piv);
            if piv != k {
                for c in 0..self.cols.len() {
                    self.local.swap(c * n + k, c * n + piv);
                }
                self.b.swap(k, piv);
            }

            // The owner turns its column into multipliers and hands them to everyone.
            let mut mult = match self.slot(k) {
                Some(c) => {
                    let col = &mut self.local[c * n..(c + 1) * n];
                    let d = col[k];
                    col[k + 1..].iter_mut().for_each(|a| *a /= d);
                    col[k + 1..].to_vec()
                }
                None => vec![0.0; n - k - 1],
            };
            self.comm.broadcast(&mut mult, owner)?;

            for (c, &j) in self.cols.iter().enumerate() {
                if j <= k {
                    continue;
                }
                let col = &mut self.local[c * n..(c + 1) * n];
                let akj = col[k];
                col[k + 1..].iter_mut().zip(&mult).for_each(|(a, m)| *a -= m * akj);
            }
            let bk = self.b[k];
            self.b[k + 1..].iter_mut().zip(&mult).for_each(|(b, m)| *b -= m * bk);
        }
        Ok(())
    }

    /// Column-oriented back substitution on U: each rank keeps the partial sums of its
    /// solved columns; the owner of column k collects row k's sum, solves x_k and
    /// broadcasts it.
    pub fn back_substitute(&self) -> Result<Vec<f64>, SolveError> {
        let n = self.n;
        let mut x = vec![0.0; n];
        let mut partial = vec![0.0; n];
        for k in (0..n).rev() {
            let owner = self.owner(k);
            let mut s = [partial[k]];
            self.comm.reduce(&mut s, ReduceOp::Sum, owner)?;
            let mut xk = [0.0];
            if let Some(c) = self.slot(k) {
                xk[0] = (self.b[k] - s[0]) / self.local[c * n + k];
            }
            self.comm.broadcast(&mut xk, owner)?;
            x[k] = xk[0];
            if let Some(c) = self.slot(k) {
                let col = &self.local[c * n..c * n + k];
                partial[..k].iter_mut().zip(col).for_each(|(p, u)| *p += u * x[k]);
            }
        }
        Ok(x)
    }
}
