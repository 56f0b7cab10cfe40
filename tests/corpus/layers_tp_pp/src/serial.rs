//! The unsharded reference: the same model, trained on every replica's batch in one
//! process, gradients averaged over the replicas.

use crate::data;
use crate::tensor::{matmul, matmul_nt, matmul_tn};

#[derive(Clone, Debug)]
pub struct Weights {
    /// Per block: W1 (D × F) and W2 (F × D).
    pub w1: Vec<Vec<f32>>,
    pub w2: Vec<Vec<f32>>,
}

impl Weights {
    pub fn init() -> Weights {
        let mut w1 = Vec::new();
        let mut w2 = Vec::new();
        for b in 0..data::BLOCKS {
            let (a, c) = data::block_weights(b);
            w1.push(a);
            w2.push(c);
        }
        Weights { w1, w2 }
    }
}

/// Forward and backward of the whole network on one batch: (loss, dW1s, dW2s).
fn grads(w: &Weights, x: &[f32], target: &[f32]) -> (f32, Vec<Vec<f32>>, Vec<Vec<f32>>) {
    let (b, d, f) = (data::BATCH, data::D, data::F);
    let mut acts = vec![x.to_vec()];
    let mut hidden = Vec::new();
    for k in 0..data::BLOCKS {
        let h: Vec<f32> = matmul(acts.last().unwrap(), &w.w1[k], b, d, f).iter().map(|v| v.tanh()).collect();
        let y = matmul(&h, &w.w2[k], b, f, d);
        hidden.push(h);
        acts.push(y);
    }
    let out = acts.last().unwrap();
    let loss = data::loss(out, target);
    let mut dy = data::loss_grad(out, target);
    let mut g1 = vec![Vec::new(); data::BLOCKS];
    let mut g2 = vec![Vec::new(); data::BLOCKS];
    for k in (0..data::BLOCKS).rev() {
        let h = &hidden[k];
        g2[k] = matmul_tn(h, &dy, b, f, d);
        let dh = matmul_nt(&dy, &w.w2[k], b, d, f);
        let dz: Vec<f32> = dh.iter().zip(h).map(|(g, y)| g * (1.0 - y * y)).collect();
        g1[k] = matmul_tn(&acts[k], &dz, b, d, f);
        dy = matmul_nt(&dz, &w.w1[k], b, f, d);
    }
    (loss, g1, g2)
}

/// Trains `steps` steps over `replicas` data-parallel replicas; returns the weights and
/// the mean loss of each step.
pub fn train(replicas: usize, steps: usize, lr: f32) -> (Weights, Vec<f32>) {
    let mut w = Weights::init();
    let mut losses = Vec::new();
    for step in 0..steps {
        let mut s1: Vec<Vec<f32>> = w.w1.iter().map(|v| vec![0.0; v.len()]).collect();
        let mut s2: Vec<Vec<f32>> = w.w2.iter().map(|v| vec![0.0; v.len()]).collect();
        let mut loss = 0.0;
        for r in 0..replicas {
            let (x, t) = data::batch(step, r);
            let (l, g1, g2) = grads(&w, &x, &t);
            loss += l;
            for k in 0..data::BLOCKS {
                s1[k].iter_mut().zip(&g1[k]).for_each(|(a, g)| *a += g);
                s2[k].iter_mut().zip(&g2[k]).for_each(|(a, g)| *a += g);
            }
        }
        for k in 0..data::BLOCKS {
            w.w1[k].iter_mut().zip(&s1[k]).for_each(|(a, g)| *a -= lr * g / replicas as f32);
            w.w2[k].iter_mut().zip(&s2[k]).for_each(|(a, g)| *a -= lr * g / replicas as f32);
        }
        losses.push(loss / replicas as f32);
    }
    (w, losses)
}
