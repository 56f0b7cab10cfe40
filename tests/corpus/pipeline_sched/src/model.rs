//! The model's math: a tied embedding `E` (V × D), one `tanh(x·W)` layer per stage, and
//! a head `logits = h·Eᵀ` with softmax cross-entropy.

pub const V: usize = 11; // vocabulary
pub const D: usize = 6; // width
pub const B: usize = 3; // rows per micro-batch
pub const LR: f64 = 0.1;

pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }
}

pub fn init_embedding() -> Vec<f64> {
    let mut g = Rng::new(7);
    (0..V * D).map(|_| 0.5 * g.uniform()).collect()
}

pub fn init_layer(stage: usize) -> Vec<f64> {
    let mut g = Rng::new(100 + stage as u64);
    (0..D * D).map(|_| 0.7 * g.uniform()).collect()
}

/// Input tokens and target tokens of the global micro-batch `id`.
pub fn tokens(id: usize) -> (Vec<usize>, Vec<usize>) {
    let mut g = Rng::new(5000 + id as u64);
    let x: Vec<usize> = (0..B).map(|_| (g.next_u64() % V as u64) as usize).collect();
    let t = x.iter().map(|&v| (3 * v + 1) % V).collect();
    (x, t)
}

pub fn embed(e: &[f64], toks: &[usize]) -> Vec<f64> {
    toks.iter().flat_map(|&t| e[t * D..(t + 1) * D].iter().copied()).collect()
}

pub fn embed_back(ge: &mut [f64], toks: &[usize], dx: &[f64]) {
    for (i, &t) in toks.iter().enumerate() {
        for c in 0..D {
            ge[t * D + c] += dx[i * D + c];
        }
    }
}

/// `tanh(x·w)` for `B` rows.
pub fn layer(x: &[f64], w: &[f64]) -> Vec<f64> {
    let mut y = vec![0.0; B * D];
    for r in 0..B {
        for o in 0..D {
            let z: f64 = (0..D).map(|i| x[r * D + i] * w[i * D + o]).sum();
            y[r * D + o] = z.tanh();
        }
    }
    y
}

/// (dx, dw) from dy for `y = tanh(x·w)`.
pub fn layer_back(x: &[f64], y: &[f64], w: &[f64], dy: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let dz: Vec<f64> = dy.iter().zip(y).map(|(d, y)| d * (1.0 - y * y)).collect();
    let mut dx = vec![0.0; B * D];
    let mut dw = vec![0.0; D * D];
    for r in 0..B {
        for o in 0..D {
            for i in 0..D {
                dx[r * D + i] += dz[r * D + o] * w[i * D + o];
                dw[i * D + o] += x[r * D + i] * dz[r * D + o];
            }
        }
    }
    (dx, dw)
}

/// Head and loss: adds `∂loss/∂E` into `ge`, returns (loss, ∂loss/∂h). The loss is
/// the cross-entropy averaged over `B` rows and scaled by `1/scale`.
pub fn head(h: &[f64], e: &[f64], targets: &[usize], scale: f64, ge: &mut [f64]) -> (f64, Vec<f64>) {
    let mut dh = vec![0.0; B * D];
    let mut loss = 0.0;
    for r in 0..B {
        let logits: Vec<f64> =
            (0..V).map(|v| (0..D).map(|c| h[r * D + c] * e[v * D + c]).sum()).collect();
        let m = logits.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let z: f64 = logits.iter().map(|l| (l - m).exp()).sum();
        loss += (z.ln() + m - logits[targets[r]]) / (B as f64 * scale);
        for v in 0..V {
            let p = (logits[v] - m).exp() / z;
            let g = (p - if v == targets[r] { 1.0 } else { 0.0 }) / (B as f64 * scale);
            for c in 0..D {
                ge[v * D + c] += g * h[r * D + c];
                dh[r * D + c] += g * e[v * D + c];
            }
        }
    }
    (loss, dh)
}

pub fn sgd(w: &mut [f64], g: &[f64]) {
    w.iter_mut().zip(g).for_each(|(w, g)| *w -= LR * g);
}
