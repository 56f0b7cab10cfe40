//! Adam on a slice of parameters, gradient-norm clipping, and the serial reference.

use crate::config::Config;
use crate::model::{micro_batch, Dataset, Mlp};

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

    pub fn step(&mut self, params: &mut [f64], grad: &[f64]) {
        assert_eq!(params.len(), grad.len());
        self.t += 1;
        let c1 = 1.0 - self.beta1.powi(self.t);
        let c2 = 1.0 - self.beta2.powi(self.t);
        for (((p, g), m), v) in params.iter_mut().zip(grad).zip(&mut self.m).zip(&mut self.v) {
            *m = self.beta1 * *m + (1.0 - self.beta1) * g;
            *v = self.beta2 * *v + (1.0 - self.beta2) * g * g;
            *p -= self.lr * (*m / c1) / ((*v / c2).sqrt() + self.eps);
        }
    }
}

/// The factor that brings a gradient of squared norm `sq_norm` down to `max_norm`.
pub fn clip_scale(sq_norm: f64, max_norm: f64) -> f64 {
    let norm = sq_norm.sqrt();
    if norm > max_norm {
        max_norm / (norm + 1e-6)
    } else {
        1.0
    }
}

pub struct Reference {
    pub params: Vec<f64>,
    pub losses: Vec<f64>,
    pub checkpoints: Vec<Vec<f64>>,
}

/// The same training in one process, on the whole batch.
pub fn serial_train(cfg: &Config, model: &Mlp, data: &Dataset) -> Reference {
    let mut p = model.init(cfg.seed);
    let mut adam = Adam::new(p.len(), cfg.lr);
    let (mut losses, mut checkpoints) = (Vec::new(), Vec::new());
    let scale = 1.0 / cfg.rows as f64;
    for step in 0..cfg.steps {
        let mut g = vec![0.0; p.len()];
        let loss: f64 =
            (0..cfg.accum).map(|k| model.accumulate(&p, data, micro_batch(cfg.rows, cfg.accum, k), scale, &mut g)).sum();
        losses.push(loss);
        if loss < cfg.tol {
            break;
        }
        if let Some(c) = cfg.clip {
            let s = clip_scale(g.iter().map(|x| x * x).sum(), c);
            g.iter_mut().for_each(|x| *x *= s);
        }
        adam.step(&mut p, &g);
        if cfg.ckpt_every > 0 && (step + 1) % cfg.ckpt_every == 0 {
            checkpoints.push(p.clone());
        }
    }
    Reference { params: p, losses, checkpoints }
}
