//! The same training on one process: each replica's sequence in the same blocks, the
//! gradients averaged over replicas, the same clip, update and early stop.

use crate::config::{block, Config};
use crate::model::{self, fold_sum, n_params};

pub struct SerialRun { pub params: Vec<f64>, pub steps: usize, pub val_history: Vec<f64> }

/// (sum of squared errors, gradient) of one sequence, block by block over `parts`.
fn serial_grad(theta: &[f64], x: &[f64], y: &[f64], cfg: &Config, parts: usize) -> (f64, Vec<f64>) {
    let (l, d) = (cfg.seq, cfg.dim);
    let blocks: Vec<_> = (0..parts).map(|j| block(l, parts, j)).collect();
    let rows = |m: &[f64], r: &std::ops::Range<usize>| m[r.start * d..r.end * d].to_vec();
    let kv: Vec<Vec<f64>> = blocks.iter().map(|r| model::block_kv(theta, &rows(x, r), r.len(), d)).collect();
    let s: Vec<f64> = fold_sum(&kv, d * d).iter().map(|z| z / l as f64).collect();
    let fwd: Vec<_> = blocks.iter().map(|r| model::block_forward(theta, &rows(x, r), &rows(y, r), &s, r.len(), d, l)).collect();
    let gs: Vec<Vec<f64>> = blocks.iter().zip(&fwd).map(|(r, f)| model::matmul_tn(&f.2, &f.1, r.len(), d, d)).collect();
    let big_g = fold_sum(&gs, d * d);
    let grads: Vec<Vec<f64>> =
        blocks.iter().zip(&fwd).map(|(r, f)| model::weight_grads(theta, &rows(x, r), &f.1, &s, &big_g, r.len(), d, l)).collect();
    (fwd.iter().map(|f| f.0).sum(), fold_sum(&grads, n_params(d)))
}

pub fn train(cfg: &Config, dp: usize, cp: usize) -> SerialRun {
    let (d, l) = (cfg.dim, cfg.seq);
    let mut params = model::init_params(d, cfg.seed, 0.3);
    let (mut best, mut bad, mut val_history) = (f64::INFINITY, 0, Vec::new());
    for step in 0..cfg.steps {
        let grads: Vec<Vec<f64>> = (0..dp)
            .map(|rep| {
                let (x, y) = model::sequence(cfg.seed, step as u64, rep, l, d);
                serial_grad(&params, &x, &y, cfg, cp).1
            })
            .collect();
        let mut grad: Vec<f64> = fold_sum(&grads, params.len()).iter().map(|g| g / dp as f64).collect();
        let norm = (0..cp).map(|j| grad[block(grad.len(), cp, j)].iter().map(|g| g * g).sum::<f64>()).sum::<f64>().sqrt();
        if norm > cfg.clip {
            grad.iter_mut().for_each(|g| *g *= cfg.clip / norm);
        }
        params.iter_mut().zip(&grad).for_each(|(p, g)| *p -= cfg.lr * g);
        if (step + 1) % cfg.eval_every == 0 {
            let val_sse = |rep| {
                let (x, y) = model::sequence(cfg.seed ^ 0xFEED, 0, rep, l, d);
                serial_grad(&params, &x, &y, cfg, cp).0
            };
            let val = (0..dp).map(val_sse).sum::<f64>() / dp as f64 / (l * d) as f64;
            val_history.push(val);
            if val < best - cfg.min_delta {
                (best, bad) = (val, 0);
            } else {
                bad += 1;
            }
            if bad >= cfg.patience {
                return SerialRun { params, steps: step + 1, val_history };
            }
        }
    }
    SerialRun { params, steps: cfg.steps, val_history }
}
