//! Logistic regression by full-batch gradient descent. Everything here talks to a
//! `Reducer` (a trait object or a generic parameter), never to dist directly.

use crate::backend::{CommResult, Reducer};
use crate::data::{Sample, SplitMix64};

pub trait Optimizer {
    fn name(&self) -> &'static str;
    fn step(&mut self, w: &mut [f64], grad: &[f64]);
}

pub struct Sgd {
    pub lr: f64,
}

impl Optimizer for Sgd {
    fn name(&self) -> &'static str {
        "sgd"
    }

    fn step(&mut self, w: &mut [f64], grad: &[f64]) {
        w.iter_mut().zip(grad).for_each(|(w, g)| *w -= self.lr * g);
    }
}

pub struct Momentum {
    lr: f64,
    beta: f64,
    velocity: Vec<f64>,
}

impl Momentum {
    pub fn new(lr: f64, beta: f64, dim: usize) -> Self {
        Momentum { lr, beta, velocity: vec![0.0; dim] }
    }
}

impl Optimizer for Momentum {
    fn name(&self) -> &'static str {
        "momentum"
    }

    fn step(&mut self, w: &mut [f64], grad: &[f64]) {
        for ((w, v), g) in w.iter_mut().zip(&mut self.velocity).zip(grad) {
            *v = self.beta * *v + g;
            *w -= self.lr * *v;
        }
    }
}

/// Picks the optimizer the flags ask for.
pub fn optimizer(lr: f64, momentum: f64, dim: usize) -> Box<dyn Optimizer> {
    if momentum > 0.0 { Box::new(Momentum::new(lr, momentum, dim)) } else { Box::new(Sgd { lr }) }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    pub w: Vec<f64>,
}

fn sigmoid(z: f64) -> f64 {
    1.0 / (1.0 + (-z).exp())
}

impl Model {
    pub fn zeros(dim: usize) -> Self {
        Model { w: vec![0.0; dim] }
    }

    /// Small random weights (only the root draws them; the others receive them).
    pub fn random(dim: usize, seed: u64) -> Self {
        let mut g = SplitMix64::new(seed ^ 0x5EED);
        Model { w: (0..dim).map(|_| 0.1 * g.symmetric()).collect() }
    }

    pub fn predict(&self, x: &[f64]) -> f64 {
        sigmoid(self.w.iter().zip(x).map(|(w, x)| w * x).sum())
    }

    /// Sum over `data` of the log-loss gradient, with the summed loss appended as the
    /// last element (one buffer, one reduction).
    pub fn grad_and_loss(&self, data: &[Sample]) -> Vec<f64> {
        let mut acc = vec![0.0; self.w.len() + 1];
        for s in data {
            let p = self.predict(&s.x);
            let err = p - s.y;
            acc.iter_mut().zip(&s.x).for_each(|(a, x)| *a += err * x);
            let p = p.clamp(1e-12, 1.0 - 1e-12);
            acc[self.w.len()] -= s.y * p.ln() + (1.0 - s.y) * (1.0 - p).ln();
        }
        acc
    }

    pub fn correct(&self, data: &[Sample]) -> u64 {
        data.iter().filter(|s| (self.predict(&s.x) > 0.5) == (s.y > 0.5)).count() as u64
    }

    /// FNV-1a over the weights' bits: equal only if the weights are bitwise equal.
    pub fn checksum(&self) -> u64 {
        self.w.iter().flat_map(|w| w.to_bits().to_le_bytes()).fold(0xCBF2_9CE4_8422_2325, |h, b| {
            (h ^ b as u64).wrapping_mul(0x0100_0000_01B3)
        })
    }
}

/// The largest |x_j| of each feature over every rank's data (1 for the bias).
pub fn feature_scale<R: Reducer + ?Sized>(reducer: &R, data: &[Sample], dim: usize) -> CommResult<Vec<f64>> {
    let mut scale = vec![0.0f64; dim];
    for s in data {
        scale.iter_mut().zip(&s.x).for_each(|(k, x)| *k = k.max(x.abs()));
    }
    reducer.max_in_place(&mut scale)?;
    Ok(scale)
}

pub struct Trainer<'a> {
    reducer: &'a dyn Reducer,
    opt: Box<dyn Optimizer>,
    global_len: usize,
}

impl<'a> Trainer<'a> {
    pub fn new(reducer: &'a dyn Reducer, opt: Box<dyn Optimizer>, global_len: usize) -> Self {
        Trainer { reducer, opt, global_len }
    }

    pub fn optimizer_name(&self) -> &'static str {
        self.opt.name()
    }

    /// One full-batch step; returns the mean loss before the step.
    pub fn step(&mut self, model: &mut Model, data: &[Sample]) -> CommResult<f64> {
        let mut g = self.grad_and_loss(model, data)?;
        let loss = g.pop().unwrap_or(0.0) / self.global_len as f64;
        g.iter_mut().for_each(|x| *x /= self.global_len as f64);
        self.opt.step(&mut model.w, &g);
        Ok(loss)
    }

    fn grad_and_loss(&self, model: &Model, data: &[Sample]) -> CommResult<Vec<f64>> {
        let mut g = model.grad_and_loss(data);
        self.reducer.sum_in_place(&mut g)?;
        Ok(g)
    }

    /// Fraction of all samples, over every rank, that the model classifies right.
    pub fn accuracy(&self, model: &Model, data: &[Sample]) -> CommResult<u64> {
        let correct = model.correct(data);
        self.reducer.count(correct)
    }

    pub fn fit(&mut self, model: &mut Model, data: &[Sample], iters: usize) -> CommResult<Vec<f64>> {
        (0..iters).map(|_| self.step(model, data)).collect()
    }
}
