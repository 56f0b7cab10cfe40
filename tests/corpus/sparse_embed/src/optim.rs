//! Optimizers applied by a row's owner to the summed gradient of that row.

use std::collections::HashMap;

pub trait Optimizer: Clone {
    fn name(&self) -> &'static str;
    /// Updates row `id` (`w`) with its gradient `g`.
    fn update(&mut self, id: u32, w: &mut [f32], g: &[f32]);
}

#[derive(Debug, Clone)]
pub struct Sgd {
    pub lr: f32,
}

impl Optimizer for Sgd {
    fn name(&self) -> &'static str {
        "sgd"
    }

    fn update(&mut self, _id: u32, w: &mut [f32], g: &[f32]) {
        w.iter_mut().zip(g).for_each(|(w, g)| *w -= self.lr * g);
    }
}

/// Adagrad with per-row state, created the first time a row is touched.
#[derive(Debug, Clone)]
pub struct Adagrad {
    pub lr: f32,
    pub eps: f32,
    sum_sq: HashMap<u32, Vec<f32>>,
}

impl Adagrad {
    pub fn new(lr: f32) -> Adagrad {
        Adagrad { lr, eps: 1e-8, sum_sq: HashMap::new() }
    }
}

impl Optimizer for Adagrad {
    fn name(&self) -> &'static str {
        "adagrad"
    }

    fn update(&mut self, id: u32, w: &mut [f32], g: &[f32]) {
        let acc = self.sum_sq.entry(id).or_insert_with(|| vec![0.0; g.len()]);
        for ((w, g), a) in w.iter_mut().zip(g).zip(acc.iter_mut()) {
            *a += g * g;
            *w -= self.lr * g / (a.sqrt() + self.eps);
        }
    }
}
