//! The test system and the serial reference solver.

/// splitmix64: small, deterministic, the same stream on every rank.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [-1, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }
}

/// A dense system `A x = b`, A row-major.
pub struct System {
    pub n: usize,
    pub a: Vec<f64>,
    pub b: Vec<f64>,
}

impl System {
    /// Random entries with a tiny diagonal, so elimination without row exchanges
    /// would blow up: the pivots must come from below the diagonal.
    pub fn random(n: usize, seed: u64) -> System {
        let mut rng = Rng::new(seed);
        let mut a: Vec<f64> = (0..n * n).map(|_| rng.uniform()).collect();
        for i in 0..n {
            a[i * n + i] *= 1e-6;
        }
        let x_true: Vec<f64> = (0..n).map(|i| 1.0 + i as f64 / n as f64).collect();
        let b = (0..n).map(|i| (0..n).map(|j| a[i * n + j] * x_true[j]).sum()).collect();
        System { n, a, b }
    }

    pub fn column(&self, j: usize) -> impl Iterator<Item = f64> + '_ {
        (0..self.n).map(move |i| self.a[i * self.n + j])
    }

    /// max_i |b_i - (A x)_i|
    pub fn residual(&self, x: &[f64]) -> f64 {
        (0..self.n)
            .map(|i| {
                let ax: f64 = (0..self.n).map(|j| self.a[i * self.n + j] * x[j]).sum();
                (self.b[i] - ax).abs()
            })
            .fold(0.0, f64::max)
    }
}

/// Gaussian elimination with partial pivoting, all in one process.
pub fn solve_serial(sys: &System) -> Result<Vec<f64>, String> {
    let n = sys.n;
    let mut a = sys.a.clone();
    let mut b = sys.b.clone();
    for k in 0..n {
        let piv = (k..n).fold(k, |best, i| if a[i * n + k].abs() > a[best * n + k].abs() { i } else { best });
        if a[piv * n + k] == 0.0 {
            return Err(format!("serial: matrix is singular at column {k}"));
        }
        if piv != k {
            for j in 0..n {
                a.swap(k * n + j, piv * n + j);
            }
            b.swap(k, piv);
        }
        for i in k + 1..n {
            let m = a[i * n + k] / a[k * n + k];
            a[i * n + k] = m;
            for j in k + 1..n {
                a[i * n + j] -= m * a[k * n + j];
            }
            b[i] -= m * b[k];
        }
    }
    let mut x = vec![0.0; n];
    for k in (0..n).rev() {
        let s: f64 = (k + 1..n).map(|j| a[k * n + j] * x[j]).sum();
        x[k] = (b[k] - s) / a[k * n + k];
    }
    Ok(x)
}
