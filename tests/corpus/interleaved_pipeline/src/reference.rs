//! The same training in one process: every stage in order, micro-batch by micro-batch.

use crate::config::Config;
use crate::model::{init_bias, loss, micro_batch, Layer};

pub struct Trained {
    pub layers: Vec<Layer>,
    pub bias: Vec<f64>,
    pub losses: Vec<f64>,
}

pub fn train_serial(cfg: &Config, stages: usize) -> Trained {
    let mut layers: Vec<Layer> =
        (0..stages).map(|s| Layer::init(cfg.seed, s, if s == 0 { cfg.in_dim } else { cfg.dim }, cfg.dim)).collect();
    let mut bias = init_bias(cfg.seed, cfg.dim);
    let mut losses = Vec::with_capacity(cfg.steps);
    for step in 0..cfg.steps {
        let mut w_grads: Vec<Vec<f64>> = layers.iter().map(|l| vec![0.0; l.w.len()]).collect();
        let mut b_grad = vec![0.0; cfg.dim];
        let mut total = 0.0;
        for mb in 0..cfg.micro {
            let (x, target) = micro_batch(cfg.seed, step, mb, cfg.batch, cfg.in_dim, cfg.dim);
            let mut acts = vec![x];
            for layer in &layers {
                let y = layer.forward(acts.last().expect("input"), &bias);
                acts.push(y);
            }
            let (l, mut dy) = loss(&acts[stages], &target);
            total += l;
            for s in (0..stages).rev() {
                let (dx, dw, db) = layers[s].backward(&acts[s], &acts[s + 1], &dy);
                w_grads[s].iter_mut().zip(&dw).for_each(|(g, d)| *g += d);
                b_grad.iter_mut().zip(&db).for_each(|(g, d)| *g += d);
                dy = dx;
            }
        }
        for (layer, g) in layers.iter_mut().zip(&w_grads) {
            layer.sgd(g, cfg.lr);
        }
        bias.iter_mut().zip(&b_grad).for_each(|(b, g)| *b -= cfg.lr * g);
        losses.push(total);
    }
    Trained { layers, bias, losses }
}
