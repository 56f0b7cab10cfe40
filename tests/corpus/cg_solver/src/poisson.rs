//! The 1-D Poisson matrix tridiag(−1, 2, −1) applied to a distributed vector. Row i
//! needs x[i−1] and x[i+1], so each rank first trades its edge values with the ranks
//! holding the neighbouring rows.

use dist_runtime::prelude::*;

use crate::dist_vec::DistVector;

/// A value moving to the rank on the left (lower rows) / on the right.
const TO_LEFT: Tag<f64> = Tag::new(7);
const TO_RIGHT: Tag<f64> = Tag::new(8);

pub struct Laplacian1d {
    comm: Comm<World>,
}

impl Laplacian1d {
    pub fn new(comm: &Comm<World>) -> Self {
        Laplacian1d { comm: comm.clone() }
    }

    /// (x[start − 1], x[end]) from the neighbours, 0 past the ends of the domain
    /// (homogeneous Dirichlet boundary).
    fn halo(&self, x: &[f64]) -> dist_runtime::Result<(f64, f64)> {
        let (r, n) = (self.comm.rank(), self.comm.size());
        let first = [x[0]];
        let last = [x[x.len() - 1]];
        let mut left = [0.0];
        let mut right = [0.0];
        // Even ranks deal with their right neighbour first, odd ranks with their left,
        // so every blocking send finds its receive already posted.
        if r % 2 == 0 {
            if r + 1 < n {
                self.comm.send(r + 1, TO_RIGHT, &last)?;
                self.comm.recv(r + 1, TO_LEFT, &mut right)?;
            }
            if r > 0 {
                self.comm.send(r - 1, TO_LEFT, &first)?;
                self.comm.recv(r - 1, TO_RIGHT, &mut left)?;
            }
        } else {
            self.comm.recv(r - 1, TO_RIGHT, &mut left)?;
            self.comm.send(r - 1, TO_LEFT, &first)?;
            if r + 1 < n {
                self.comm.recv(r + 1, TO_LEFT, &mut right)?;
                self.comm.send(r + 1, TO_RIGHT, &last)?;
            }
        }
        Ok((left[0], right[0]))
    }

    /// y = A · x
    pub fn apply(&self, x: &DistVector, y: &mut DistVector) -> dist_runtime::Result<()> {
        let (left, right) = self.halo(&x.local)?;
        let v = &x.local;
        let m = v.len();
        for i in 0..m {
            let lo = if i == 0 { left } else { v[i - 1] };
            let hi = if i + 1 == m { right } else { v[i + 1] };
            y.local[i] = 2.0 * v[i] - lo - hi;
        }
        Ok(())
    }
}

/// The same product on a whole vector, for the serial reference.
pub fn apply_serial(x: &[f64]) -> Vec<f64> {
    let n = x.len();
    (0..n)
        .map(|i| {
            let lo = if i > 0 { x[i - 1] } else { 0.0 };
            let hi = if i + 1 < n { x[i + 1] } else { 0.0 };
            2.0 * x[i] - lo - hi
        })
        .collect()
}
