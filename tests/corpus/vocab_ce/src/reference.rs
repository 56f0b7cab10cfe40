//! The unsharded model on one process: the same steps on the whole global batch.

use crate::cli::Options;
use crate::data;

pub struct SerialModel {
    pub emb: Vec<f64>,
    pub out: Vec<f64>,
    dim: usize,
    vocab: usize,
}

impl SerialModel {
    pub fn new(opts: &Options) -> SerialModel {
        let (emb, out) = data::init_params(opts.vocab, opts.dim, opts.seed);
        SerialModel { emb, out, dim: opts.dim, vocab: opts.vocab }
    }

    /// One SGD step over the batches of `replicas` replicas; returns the mean loss.
    pub fn step(&mut self, opts: &Options, replicas: usize, step: usize) -> f64 {
        let (d, v) = (self.dim, self.vocab);
        let mut g_emb = vec![0.0; v * d];
        let mut g_out = vec![0.0; v * d];
        let mut total = 0.0;
        let scale = 1.0 / (opts.batch * replicas) as f64;
        for rep in 0..replicas {
            let (tokens, targets) = data::batch(v, opts.batch, opts.seed, rep, step);
            for (&x, &y) in tokens.iter().zip(&targets) {
                let h: Vec<f64> = self.emb[x * d..(x + 1) * d].iter().map(|e| e.tanh()).collect();
                let logits: Vec<f64> =
                    (0..v).map(|w| h.iter().zip(&self.out[w * d..(w + 1) * d]).map(|(a, b)| a * b).sum()).collect();
                let m = logits.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let s: f64 = logits.iter().map(|l| (l - m).exp()).sum();
                total += s.ln() + m - logits[y];
                let mut dh = vec![0.0; d];
                for w in 0..v {
                    let g = ((logits[w] - m).exp() / s - if w == y { 1.0 } else { 0.0 }) * scale;
                    for k in 0..d {
                        g_out[w * d + k] += g * h[k];
                        dh[k] += g * self.out[w * d + k];
                    }
                }
                for k in 0..d {
                    g_emb[x * d + k] += dh[k] * (1.0 - h[k] * h[k]);
                }
            }
        }
        self.emb.iter_mut().zip(&g_emb).for_each(|(p, g)| *p -= opts.lr * g);
        self.out.iter_mut().zip(&g_out).for_each(|(p, g)| *p -= opts.lr * g);
        total * scale
    }
}
