//! Vocab-parallel embedding and cross-entropy (Megatron's `VocabParallelEmbedding` and
//! `vocab_parallel_cross_entropy`): both tables are split by vocabulary rows over the
//! tensor-parallel group, and replicas of the whole thing train on their own batches.

use crate::cli::Options;
use crate::data;
use dist_runtime::prelude::*;

dist_runtime::group!(pub Dp);
dist_runtime::group!(pub Tp);

pub struct ShardedModel {
    dp: Comm<Dp>,
    tp: Comm<Tp>,
    /// Vocabulary rows `[lo, hi)` live here.
    lo: usize,
    hi: usize,
    dim: usize,
    emb: Vec<f64>,
    out: Vec<f64>,
}

/// What the forward pass keeps for the backward pass.
struct Activations {
    h: Vec<f64>,
    logits: Vec<f64>,
    max: Vec<f64>,
    sum_exp: Vec<f64>,
}

impl ShardedModel {
    pub fn new(dp: Comm<Dp>, tp: Comm<Tp>, opts: &Options) -> ShardedModel {
        let (lo, hi) = data::vocab_range(opts.vocab, tp.size(), tp.rank());
        let (emb, out) = data::init_params(opts.vocab, opts.dim, opts.seed);
        let d = opts.dim;
        ShardedModel { lo, hi, dim: d, emb: emb[lo * d..hi * d].to_vec(), out: out[lo * d..hi * d].to_vec(), dp, tp }
    }

    pub fn replica(&self) -> usize {
        self.dp.rank()
    }

    pub fn shard(&self) -> (usize, usize, &[f64], &[f64]) {
        (self.lo, self.hi, &self.emb, &self.out)
    }

    fn owns(&self, token: usize) -> bool {
        (self.lo..self.hi).contains(&token)
    }

    /// Looks the tokens up in the sharded table: rows owned elsewhere are zero here, and
    /// the sum over the group fills them in.
    fn embed(&self, tokens: &[usize]) -> dist_runtime::Result<Vec<f64>> {
        let d = self.dim;
        let mut e = vec![0.0; tokens.len() * d];
        for (row, &t) in e.chunks_exact_mut(d).zip(tokens) {
            if self.owns(t) {
                let local = t - self.lo;
                row.copy_from_slice(&self.emb[local * d..(local + 1) * d]);
            }
        }
        self.tp.all_reduce(&mut e, ReduceOp::Sum)?;
        Ok(e)
    }

    fn forward(&self, tokens: &[usize], targets: &[usize]) -> dist_runtime::Result<(Activations, Vec<f64>)> {
        let (d, w, b) = (self.dim, self.hi - self.lo, tokens.len());
        let h: Vec<f64> = self.embed(tokens)?.into_iter().map(f64::tanh).collect();
        let mut logits = vec![0.0; b * w];
        for i in 0..b {
            for v in 0..w {
                logits[i * w + v] = (0..d).map(|k| h[i * d + k] * self.out[v * d + k]).sum();
            }
        }
        let mut max: Vec<f64> =
            logits.chunks_exact(w).map(|row| row.iter().cloned().fold(f64::NEG_INFINITY, f64::max)).collect();
        self.tp.all_reduce(&mut max, ReduceOp::Max)?;
        // Sum of exponentials and the target logit, reduced together.
        let mut parts = vec![0.0; 2 * b];
        for i in 0..b {
            parts[i] = logits[i * w..(i + 1) * w].iter().map(|l| (l - max[i]).exp()).sum();
            if self.owns(targets[i]) {
                parts[b + i] = logits[i * w + targets[i] - self.lo];
            }
        }
        self.tp.all_reduce(&mut parts, ReduceOp::Sum)?;
        let losses = (0..b).map(|i| parts[i].ln() + max[i] - parts[b + i]).collect();
        let sum_exp = parts[..b].to_vec();
        Ok((Activations { h, logits, max, sum_exp }, losses))
    }

    /// Gradients of the mean loss for the local shard: (d emb, d out).
    fn backward(&self, acts: &Activations, tokens: &[usize], targets: &[usize]) -> dist_runtime::Result<Vec<f64>> {
        let (d, w, b) = (self.dim, self.hi - self.lo, tokens.len());
        let mut grads = vec![0.0; 2 * w * d];
        let (g_emb, g_out) = grads.split_at_mut(w * d);
        let mut dh = vec![0.0; b * d];
        for i in 0..b {
            for v in 0..w {
                let p = (acts.logits[i * w + v] - acts.max[i]).exp() / acts.sum_exp[i];
                let onehot = if targets[i] == self.lo + v { 1.0 } else { 0.0 };
                let g = (p - onehot) / b as f64;
                for k in 0..d {
                    g_out[v * d + k] += g * acts.h[i * d + k];
                    dh[i * d + k] += g * self.out[v * d + k];
                }
            }
        }
        // Each shard saw only its own vocabulary rows: sum the partial input gradients.
        self.tp.all_reduce(&mut dh, ReduceOp::Sum)?;
        for (i, &t) in tokens.iter().enumerate() {
            if self.owns(t) {
                let local = t - self.lo;
                for k in 0..d {
                    let hk = acts.h[i * d + k];
                    g_emb[local * d + k] += dh[i * d + k] * (1.0 - hk * hk);
                }
            }
        }
        Ok(grads)
    }

    /// One data-parallel SGD step; returns the loss averaged over every replica.
    pub fn train_step(&mut self, tokens: &[usize], targets: &[usize], lr: f64) -> dist_runtime::Result<f64> {
        let (acts, losses) = self.forward(tokens, targets)?;
        let mut grads = self.backward(&acts, tokens, targets)?;
        self.dp.all_reduce(&mut grads, ReduceOp::Avg)?;
        let half = grads.len() / 2;
        self.emb.iter_mut().zip(&grads[..half]).for_each(|(p, g)| *p -= lr * g);
        self.out.iter_mut().zip(&grads[half..]).for_each(|(p, g)| *p -= lr * g);
        let mut loss = [losses.iter().sum::<f64>() / losses.len() as f64];
        self.dp.all_reduce(&mut loss, ReduceOp::Avg)?;
        Ok(loss[0])
    }
}
