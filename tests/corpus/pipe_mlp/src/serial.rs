//! The whole model trained in one process on every replica's micro-batches.

use crate::config::Config;
use crate::data::micro_batch;
use crate::model::{backward, forward, layer_weights, loss};

pub struct Reference {
    pub weights: Vec<Vec<f64>>,
    pub losses: Vec<f64>,
}

pub fn train(cfg: &Config) -> Reference {
    let (rows, width) = (cfg.rows, cfg.width);
    let mut ws: Vec<Vec<f64>> = (0..cfg.layers).map(|l| layer_weights(l, width)).collect();
    let mut losses = Vec::new();
    for step in 0..cfg.steps {
        let mut grads = vec![vec![0.0; width * width]; cfg.layers];
        let mut total = 0.0;
        for replica in 0..cfg.dp {
            for mb in 0..cfg.micro {
                let (x, t) = micro_batch(step, replica, mb, rows, width);
                let mut acts = vec![x];
                for w in &ws {
                    acts.push(forward(acts.last().unwrap(), w, rows, width));
                }
                let (l, mut dy) = loss(acts.last().unwrap(), &t);
                total += l;
                for k in (0..cfg.layers).rev() {
                    let (dx, dw) = backward(&acts[k], &acts[k + 1], &ws[k], &dy, rows, width);
                    grads[k].iter_mut().zip(&dw).for_each(|(a, b)| *a += b);
                    dy = dx;
                }
            }
        }
        for (w, g) in ws.iter_mut().zip(&grads) {
            w.iter_mut().zip(g).for_each(|(w, g)| *w -= cfg.lr * g);
        }
        losses.push(total);
    }
    Reference { weights: ws, losses }
}
