//! Layers `y = tanh(x·W + b)` where every layer shares one bias vector `b` (tied),
//! the data, and the small matrix helpers.

pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng { Rng(seed) }
    pub fn uniform(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }
    pub fn vec(&mut self, n: usize, scale: f64) -> Vec<f64> {
        (0..n).map(|_| self.uniform() * scale).collect()
    }
}

#[derive(Clone, Debug)]
pub struct Layer { pub w: Vec<f64>, pub din: usize, pub dout: usize } // w: din × dout, row-major

impl Layer {
    pub fn init(seed: u64, index: usize, din: usize, dout: usize) -> Layer {
        let scale = 1.2 / (din as f64).sqrt();
        Layer { w: Rng::new(seed * 1000 + index as u64).vec(din * dout, scale), din, dout }
    }

    pub fn forward(&self, x: &[f64], bias: &[f64]) -> Vec<f64> {
        let rows = x.len() / self.din;
        let mut y = Vec::with_capacity(rows * self.dout);
        for r in 0..rows {
            let xr = &x[r * self.din..(r + 1) * self.din];
            y.extend((0..self.dout).map(|j| {
                let z: f64 = xr.iter().enumerate().map(|(i, v)| v * self.w[i * self.dout + j]).sum();
                (z + bias[j]).tanh()
            }));
        }
        y
    }

    /// Given dL/dy for input `x` and output `y`: (dL/dx, dL/dW, dL/db).
    pub fn backward(&self, x: &[f64], y: &[f64], dy: &[f64]) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let rows = x.len() / self.din;
        let dz: Vec<f64> = dy.iter().zip(y).map(|(g, y)| g * (1.0 - y * y)).collect();
        let mut dx = vec![0.0; rows * self.din];
        let mut dw = vec![0.0; self.din * self.dout];
        let mut db = vec![0.0; self.dout];
        for r in 0..rows {
            let (xr, dzr) = (&x[r * self.din..(r + 1) * self.din], &dz[r * self.dout..(r + 1) * self.dout]);
            for i in 0..self.din {
                for j in 0..self.dout {
                    dw[i * self.dout + j] += xr[i] * dzr[j];
                    dx[r * self.din + i] += dzr[j] * self.w[i * self.dout + j];
                }
            }
            db.iter_mut().zip(dzr).for_each(|(b, d)| *b += d);
        }
        (dx, dw, db)
    }

    pub fn sgd(&mut self, grad: &[f64], lr: f64) { self.w.iter_mut().zip(grad).for_each(|(w, g)| *w -= lr * g) }
}

pub fn init_bias(seed: u64, dim: usize) -> Vec<f64> { Rng::new(seed ^ 0xB1A5).vec(dim, 0.1) }

/// (input, target) of micro-batch `mb` at `step`.
pub fn micro_batch(seed: u64, step: usize, mb: usize, rows: usize, din: usize, dout: usize) -> (Vec<f64>, Vec<f64>) {
    let mut g = Rng::new(seed.wrapping_mul(31337) + (step * 1000 + mb) as u64);
    (g.vec(rows * din, 1.0), g.vec(rows * dout, 0.7))
}

/// 0.5·‖y − t‖² and its gradient.
pub fn loss(y: &[f64], t: &[f64]) -> (f64, Vec<f64>) {
    let d: Vec<f64> = y.iter().zip(t).map(|(a, b)| a - b).collect();
    (0.5 * d.iter().map(|v| v * v).sum::<f64>(), d)
}
