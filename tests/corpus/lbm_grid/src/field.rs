//! A block of the temperature field with one layer of ghost cells, and the 9-point
//! diffusion step (which reads the corner ghosts).

/// Initial temperature at global point (x, y).
pub fn initial(x: usize, y: usize, nx: usize, ny: usize) -> f64 {
    let h = (x as u64).wrapping_mul(2_654_435_761) ^ (y as u64).wrapping_mul(40_503);
    let noise = (h % 1000) as f64 / 1000.0;
    let (dx, dy) = (x as f64 - nx as f64 / 3.0, y as f64 - ny as f64 / 2.0);
    noise + 10.0 * (-(dx * dx + dy * dy) / 8.0).exp()
}

#[derive(Clone, Debug)]
pub struct Field {
    pub lx: usize,
    pub ly: usize,
    /// (lx + 2) × (ly + 2), row-major, ghosts included.
    pub data: Vec<f64>,
}

impl Field {
    pub fn new(x0: usize, lx: usize, y0: usize, ly: usize, nx: usize, ny: usize) -> Field {
        let mut f = Field { lx, ly, data: vec![0.0; (lx + 2) * (ly + 2)] };
        for j in 0..ly {
            for i in 0..lx {
                let k = f.idx(i + 1, j + 1);
                f.data[k] = initial(x0 + i, y0 + j, nx, ny);
            }
        }
        f
    }

    #[inline]
    pub fn idx(&self, i: usize, j: usize) -> usize {
        j * (self.lx + 2) + i
    }

    pub fn column(&self, i: usize) -> Vec<f64> {
        (1..=self.ly).map(|j| self.data[self.idx(i, j)]).collect()
    }

    pub fn set_column(&mut self, i: usize, vals: &[f64]) {
        for (j, v) in (1..=self.ly).zip(vals) {
            let k = self.idx(i, j);
            self.data[k] = *v;
        }
    }

    /// Row `j`, ghost columns included.
    pub fn row(&self, j: usize) -> Vec<f64> {
        let w = self.lx + 2;
        self.data[j * w..(j + 1) * w].to_vec()
    }

    pub fn set_row(&mut self, j: usize, vals: &[f64]) {
        let w = self.lx + 2;
        self.data[j * w..(j + 1) * w].copy_from_slice(vals);
    }

    /// The owned cells, row-major, without ghosts.
    pub fn interior(&self) -> Vec<f64> {
        (1..=self.ly).flat_map(|j| (1..=self.lx).map(move |i| (i, j))).map(|(i, j)| self.data[self.idx(i, j)]).collect()
    }

    pub fn local_sum(&self) -> f64 {
        self.interior().iter().sum()
    }

    /// One explicit step; the ghosts must be current.
    pub fn step(&mut self, alpha: f64) {
        let old = self.data.clone();
        let w = self.lx + 2;
        for j in 1..=self.ly {
            for i in 1..=self.lx {
                let c = j * w + i;
                let v = stencil(old[c], [old[c - 1], old[c + 1], old[c - w], old[c + w]], [
                    old[c - w - 1],
                    old[c - w + 1],
                    old[c + w - 1],
                    old[c + w + 1],
                ]);
                self.data[c] = old[c] + alpha * v;
            }
        }
    }
}

/// The 9-point Laplacian (sides weighted 4, corners 1, over 6).
pub fn stencil(c: f64, sides: [f64; 4], corners: [f64; 4]) -> f64 {
    (4.0 * (sides[0] + sides[1] + sides[2] + sides[3]) + (corners[0] + corners[1] + corners[2] + corners[3]) - 20.0 * c)
        / 6.0
}

/// The whole periodic field in one process, `steps` steps.
pub fn serial(nx: usize, ny: usize, steps: usize, alpha: f64) -> Vec<f64> {
    let mut u: Vec<f64> = (0..ny).flat_map(|y| (0..nx).map(move |x| (x, y))).map(|(x, y)| initial(x, y, nx, ny)).collect();
    let at = |u: &[f64], x: usize, y: usize| u[(y % ny) * nx + (x % nx)];
    for _ in 0..steps {
        let old = u.clone();
        for y in 0..ny {
            for x in 0..nx {
                let (xm, xp, ym, yp) = (x + nx - 1, x + 1, y + ny - 1, y + 1);
                let v = stencil(
                    at(&old, x, y),
                    [at(&old, xm, y), at(&old, xp, y), at(&old, x, ym), at(&old, x, yp)],
                    [at(&old, xm, ym), at(&old, xp, ym), at(&old, xm, yp), at(&old, xp, yp)],
                );
                u[y * nx + x] = old[y * nx + x] + alpha * v;
            }
        }
    }
    u
}
