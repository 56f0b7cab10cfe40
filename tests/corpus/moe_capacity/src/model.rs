//! The gate and the experts; every weight comes from the seed, so any rank can build
//! any piece.

use crate::config::Activation;

pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng { Rng(seed) }
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }
    pub fn vec(&mut self, n: usize, scale: f64) -> Vec<f64> {
        (0..n).map(|_| self.uniform() * scale).collect()
    }
}

/// Global token `g`'s input vector.
pub fn token(seed: u64, g: usize, dim: usize) -> Vec<f64> {
    Rng::new(seed.wrapping_mul(7_777_777) + g as u64).vec(dim, 1.0)
}

pub struct Gate {
    w: Vec<f64>, // dim × experts
    experts: usize,
}

impl Gate {
    pub fn new(seed: u64, dim: usize, experts: usize) -> Gate {
        Gate { w: Rng::new(seed ^ 0xA5A5).vec(dim * experts, 1.5), experts }
    }

    /// Softmax over the experts.
    pub fn probs(&self, x: &[f64]) -> Vec<f64> {
        let logits: Vec<f64> = (0..self.experts)
            .map(|e| x.iter().enumerate().map(|(i, xi)| xi * self.w[i * self.experts + e]).sum())
            .collect();
        let m = logits.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let ex: Vec<f64> = logits.iter().map(|l| (l - m).exp()).collect();
        let z: f64 = ex.iter().sum();
        ex.into_iter().map(|v| v / z).collect()
    }

    /// Top-1: the chosen expert and its probability (ties to the lower index).
    pub fn top1(probs: &[f64]) -> (usize, f64) {
        probs.iter().enumerate().fold((0, f64::NEG_INFINITY), |best, (e, &p)| if p > best.1 { (e, p) } else { best })
    }
}

pub trait Expert { fn forward(&self, x: &[f64]) -> Vec<f64>; }

/// `act(x·W + b)`.
pub struct Dense<F: Fn(f64) -> f64> {
    w: Vec<f64>,
    b: Vec<f64>,
    dim: usize,
    act: F,
}

impl<F: Fn(f64) -> f64> Expert for Dense<F> {
    fn forward(&self, x: &[f64]) -> Vec<f64> {
        (0..self.dim)
            .map(|j| {
                let z: f64 = x.iter().enumerate().map(|(i, xi)| xi * self.w[i * self.dim + j]).sum();
                (self.act)(z + self.b[j])
            })
            .collect()
    }
}

pub fn make_expert(seed: u64, e: usize, dim: usize, act: Activation) -> Box<dyn Expert> {
    let mut rng = Rng::new(seed.wrapping_mul(31) + 1000 + e as u64);
    let (w, b) = (rng.vec(dim * dim, 0.7), rng.vec(dim, 0.2));
    match act {
        Activation::Tanh => Box::new(Dense { w, b, dim, act: f64::tanh }),
        Activation::Relu => Box::new(Dense { w, b, dim, act: |z: f64| z.max(0.0) }),
    }
}
