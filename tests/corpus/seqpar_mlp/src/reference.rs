//! The same training in one process: every replica's batch, full weights.

use crate::config::{init_model, replica_data, Config};
use crate::model::Model;
use crate::parallel::Grads;

pub fn train(cfg: &Config, replicas: usize) -> (Model, Vec<f64>) {
    let mut model = init_model(cfg);
    let data: Vec<_> = (0..replicas).map(|d| replica_data(cfg, d)).collect();
    let seq = cfg.seq as f64;
    let mut losses = Vec::new();
    for _ in 0..cfg.steps {
        let mut total = 0.0;
        let mut sum = Grads::new();
        for (x, t) in &data {
            let act = model.hidden_act(x, cfg.seq);
            let mut y = model.partial_out(&act, cfg.seq);
            model.add_bias(&mut y);
            let diff: Vec<f64> = y.iter().zip(t).map(|(y, t)| y - t).collect();
            total += diff.iter().map(|d| d * d).sum::<f64>() / (2.0 * seq);
            let dy: Vec<f64> = diff.iter().map(|d| d / seq).collect();
            let mut g = model.backward(x, &act, &dy, cfg.seq);
            g.insert("b2", model.bias_grad(&dy));
            for (name, g) in g {
                let acc = sum.entry(name).or_insert_with(|| vec![0.0; g.len()]);
                acc.iter_mut().zip(&g).for_each(|(a, b)| *a += b);
            }
        }
        sum.values_mut().flatten().for_each(|x| *x /= replicas as f64);
        model.sgd(&sum, cfg.lr);
        losses.push(total / replicas as f64);
    }
    (model, losses)
}
