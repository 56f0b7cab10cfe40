//! Optimizers over a slice of parameters (a ZeRO-1 shard or the full vector).

pub trait Optimizer {
    /// One update of `params` from `grads` (same length).
    fn step(&mut self, params: &mut [f64], grads: &[f64]);
    fn name(&self) -> &'static str;
}

pub struct Adam {
    lr: f64,
    beta1: f64,
    beta2: f64,
    eps: f64,
    t: i32,
    m: Vec<f64>,
    v: Vec<f64>,
}

impl Adam {
    pub fn new(len: usize, lr: f64) -> Adam {
        Adam { lr, beta1: 0.9, beta2: 0.999, eps: 1e-8, t: 0, m: vec![0.0; len], v: vec![0.0; len] }
    }
}

impl Optimizer for Adam {
    fn step(&mut self, params: &mut [f64], grads: &[f64]) {
        assert_eq!(params.len(), self.m.len(), "Adam state sized for another shard");
        self.t += 1;
        let c1 = 1.0 - self.beta1.powi(self.t);
        let c2 = 1.0 - self.beta2.powi(self.t);
        for (((p, g), m), v) in params.iter_mut().zip(grads).zip(self.m.iter_mut()).zip(self.v.iter_mut()) {
            *m = self.beta1 * *m + (1.0 - self.beta1) * g;
            *v = self.beta2 * *v + (1.0 - self.beta2) * g * g;
            let mhat = *m / c1;
            let vhat = *v / c2;
            *p -= self.lr * mhat / (vhat.sqrt() + self.eps);
        }
    }

    fn name(&self) -> &'static str {
        "adam"
    }
}

/// The clipping coefficient for a gradient of global norm `norm`.
pub fn clip_coef(norm: f64, max_norm: f64) -> f64 {
    (max_norm / (norm + 1e-6)).min(1.0)
}
