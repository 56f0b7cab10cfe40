//! A rectangle of the temperature field with one ghost layer, double-buffered for
//! Jacobi sweeps. Ghost cells on the physical boundary hold the boundary condition;
//! the others are filled by the halo exchange.

use std::ops::Range;

/// Dirichlet data: the top edge is held at 1, the left edge at 0.5, the rest at 0.
pub fn boundary(gy: isize, gx: isize, ny: usize, _nx: usize) -> f64 {
    if gy < 0 {
        1.0
    } else if gx < 0 && (gy as usize) < ny {
        0.5
    } else {
        0.0
    }
}

#[derive(Clone)]
pub struct Field {
    pub w: usize,
    pub h: usize,
    cur: Vec<f64>,
    next: Vec<f64>,
}

impl Field {
    /// The block `rows × cols` of an `nx × ny` domain, zero inside.
    pub fn new(rows: Range<usize>, cols: Range<usize>, nx: usize, ny: usize) -> Field {
        let (h, w) = (rows.len(), cols.len());
        let mut cur = vec![0.0; (h + 2) * (w + 2)];
        for i in 0..h + 2 {
            for j in 0..w + 2 {
                if i == 0 || j == 0 || i == h + 1 || j == w + 1 {
                    let gy = rows.start as isize + i as isize - 1;
                    let gx = cols.start as isize + j as isize - 1;
                    cur[i * (w + 2) + j] = boundary(gy, gx, ny, nx);
                }
            }
        }
        Field { w, h, next: cur.clone(), cur }
    }

    #[inline]
    fn at(&self, i: usize, j: usize) -> usize {
        i * (self.w + 2) + j
    }

    /// Interior row `i` (0-based), for sending north or south.
    pub fn row(&self, i: usize) -> Vec<f64> {
        let s = self.at(i + 1, 1);
        self.cur[s..s + self.w].to_vec()
    }

    /// Interior column `j` (0-based), for sending west or east.
    pub fn col(&self, j: usize) -> Vec<f64> {
        (0..self.h).map(|i| self.cur[self.at(i + 1, j + 1)]).collect()
    }

    pub fn set_ghost_row(&mut self, top: bool, vals: &[f64]) {
        let i = if top { 0 } else { self.h + 1 };
        let s = self.at(i, 1);
        self.cur[s..s + self.w].copy_from_slice(vals);
    }

    pub fn set_ghost_col(&mut self, left: bool, vals: &[f64]) {
        let j = if left { 0 } else { self.w + 1 };
        for (i, v) in vals.iter().enumerate() {
            let k = self.at(i + 1, j);
            self.cur[k] = *v;
        }
    }

    /// One Jacobi sweep; returns the sum of squared updates over the interior.
    pub fn sweep(&mut self) -> f64 {
        let mut sq = 0.0;
        for i in 1..=self.h {
            for j in 1..=self.w {
                let k = self.at(i, j);
                let v = 0.25 * (self.cur[k - self.w - 2] + self.cur[k + self.w + 2] + self.cur[k - 1] + self.cur[k + 1]);
                sq += (v - self.cur[k]) * (v - self.cur[k]);
                self.next[k] = v;
            }
        }
        std::mem::swap(&mut self.cur, &mut self.next);
        sq
    }

    pub fn interior(&self) -> impl Iterator<Item = f64> + '_ {
        (1..=self.h).flat_map(move |i| (1..=self.w).map(move |j| self.cur[self.at(i, j)]))
    }

    /// Value at interior cell (i, j).
    pub fn get(&self, i: usize, j: usize) -> f64 {
        self.cur[self.at(i + 1, j + 1)]
    }
}
