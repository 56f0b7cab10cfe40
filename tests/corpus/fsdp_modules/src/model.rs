//! Layers (as plain math on flat parameter vectors), data and loss.

/// A layer whose parameters live in one flat vector.
pub trait Module {
    fn num_params(&self) -> usize;
    /// Output for `rows` rows of `x`.
    fn forward(&self, params: &[f64], x: &[f64], rows: usize) -> Vec<f64>;
    /// From the output gradient `dy`: (input gradient, parameter gradient).
    fn backward(&self, params: &[f64], x: &[f64], y: &[f64], dy: &[f64], rows: usize) -> (Vec<f64>, Vec<f64>);
    /// Fresh parameters.
    fn init(&self, rng: &mut Rng) -> Vec<f64>;
}

/// `y = act(x·W + b)`, with `W` stored `[in][out]` then `b`.
#[derive(Debug, Clone)]
pub struct Linear {
    pub inp: usize,
    pub out: usize,
    pub tanh: bool,
}

impl Module for Linear {
    fn num_params(&self) -> usize {
        self.inp * self.out + self.out
    }
    fn forward(&self, p: &[f64], x: &[f64], rows: usize) -> Vec<f64> {
        let (w, b) = p.split_at(self.inp * self.out);
        let mut y = vec![0.0; rows * self.out];
        for r in 0..rows {
            for o in 0..self.out {
                let mut z = b[o];
                for i in 0..self.inp {
                    z += x[r * self.inp + i] * w[i * self.out + o];
                }
                y[r * self.out + o] = if self.tanh { z.tanh() } else { z };
            }
        }
        y
    }
    fn backward(&self, p: &[f64], x: &[f64], y: &[f64], dy: &[f64], rows: usize) -> (Vec<f64>, Vec<f64>) {
        let w = &p[..self.inp * self.out];
        let dz: Vec<f64> = if self.tanh {
            dy.iter().zip(y).map(|(d, y)| d * (1.0 - y * y)).collect()
        } else {
            dy.to_vec()
        };
        let mut dx = vec![0.0; rows * self.inp];
        let mut dp = vec![0.0; self.num_params()];
        for r in 0..rows {
            for o in 0..self.out {
                let g = dz[r * self.out + o];
                dp[self.inp * self.out + o] += g;
                for i in 0..self.inp {
                    dp[i * self.out + o] += x[r * self.inp + i] * g;
                    dx[r * self.inp + i] += w[i * self.out + o] * g;
                }
            }
        }
        (dx, dp)
    }
    fn init(&self, rng: &mut Rng) -> Vec<f64> {
        let scale = 1.0 / (self.inp as f64).sqrt();
        (0..self.num_params()).map(|_| rng.uniform() * scale).collect()
    }
}

/// The MLP's layers for the widths `dims`: tanh everywhere but the last.
pub fn layers(dims: &[usize]) -> Vec<Linear> {
    (0..dims.len() - 1)
        .map(|l| Linear { inp: dims[l], out: dims[l + 1], tanh: l + 2 < dims.len() })
        .collect()
}

/// A small deterministic generator (xorshift64*), uniform in [-1, 1).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let v = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11;
        v as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }
}

/// The global micro-batch `mb` of step `step`: (inputs, targets), `rows` rows each.
pub fn batch(seed: u64, step: usize, mb: usize, rows: usize, din: usize, dout: usize) -> (Vec<f64>, Vec<f64>) {
    let mut g = Rng::new(seed * 1_000_003 + (step * 131 + mb) as u64);
    let x: Vec<f64> = (0..rows * din).map(|_| g.uniform()).collect();
    let t: Vec<f64> = (0..rows * dout)
        .map(|k| (x[(k / dout) * din + k % din.min(dout)] * 1.5).sin() * 0.8)
        .collect();
    (x, t)
}

/// Gradient of `0.5·‖y − t‖² / denom` with respect to `y`.
pub fn mse_grad(y: &[f64], t: &[f64], denom: f64) -> Vec<f64> {
    y.iter().zip(t).map(|(a, b)| (a - b) / denom).collect()
}

/// Rows `[lo, hi)` of `len` rows split over `parts` as evenly as possible, for part `p`.
pub fn row_range(len: usize, parts: usize, p: usize) -> (usize, usize) {
    let base = len / parts;
    let extra = len % parts;
    let lo = p * base + p.min(extra);
    (lo, lo + base + usize::from(p < extra))
}
