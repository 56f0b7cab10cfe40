//! The same training in one process on full matrices: the reference.

use crate::config::Config;
use crate::data::{batch_rows, shard, Dataset, D_OUT};

struct Linear {
    w: Vec<f32>,
    b: Vec<f32>,
    fan_in: usize,
    fan_out: usize,
}

impl Linear {
    fn forward(&self, x: &[f32]) -> Vec<f32> {
        x.chunks(self.fan_in)
            .flat_map(|xr| {
                (0..self.fan_out).map(move |o| {
                    self.b[o] + xr.iter().zip(&self.w[o * self.fan_in..(o + 1) * self.fan_in]).map(|(a, b)| a * b).sum::<f32>()
                })
            })
            .collect()
    }
}

/// Trains as the distributed program does (micro-batches, early stopping) and returns
/// the final weights of the linear layers and the number of steps taken.
pub fn train(cfg: &Config, train: &Dataset, valid: &Dataset, dp: usize) -> (Vec<(Vec<f32>, Vec<f32>)>, usize) {
    let init = crate::data::initial_weights(cfg.seed);
    let mut layers: Vec<Linear> =
        init.into_iter().map(|(w, b, fan_in, fan_out)| Linear { w, b, fan_in, fan_out }).collect();
    let forward = |layers: &[Linear], x: &[f32]| -> Vec<Vec<f32>> {
        // activations[i] is the input of layer i; the last is the output.
        let mut acts = vec![x.to_vec()];
        for (i, l) in layers.iter().enumerate() {
            let mut y = l.forward(acts.last().unwrap());
            if i + 1 < layers.len() {
                y.iter_mut().for_each(|v| *v = v.tanh());
            }
            acts.push(y);
        }
        acts
    };
    let mut stopper = crate::model::EarlyStopping::new(cfg.patience);
    let mut steps = 0;
    for step in 0..cfg.steps {
        let mut grads: Vec<(Vec<f32>, Vec<f32>)> =
            layers.iter().map(|l| (vec![0.0; l.w.len()], vec![0.0; l.b.len()])).collect();
        let rows = batch_rows(step, cfg.batch, train.rows);
        // The same micro-batches as the replicas, in any order: gradients are sums.
        for d in 0..dp {
            let (lo, hi) = shard(rows.len(), dp, d);
            let mine = &rows[lo..hi];
            for m in 0..cfg.micro_batches {
                let (a, b) = shard(mine.len(), cfg.micro_batches, m);
                let (x, t) = train.select(&mine[a..b]);
                let acts = forward(&layers, &x);
                let mut g: Vec<f32> = acts.last().unwrap().iter().zip(&t).map(|(y, t)| y - t).collect();
                for i in (0..layers.len()).rev() {
                    let l = &layers[i];
                    if i + 1 < layers.len() {
                        g.iter_mut().zip(&acts[i + 1]).for_each(|(g, y)| *g *= 1.0 - y * y);
                    }
                    let xin = &acts[i];
                    let rows = g.len() / l.fan_out;
                    let mut dx = vec![0.0; rows * l.fan_in];
                    for r in 0..rows {
                        for o in 0..l.fan_out {
                            let go = g[r * l.fan_out + o];
                            grads[i].1[o] += go;
                            for k in 0..l.fan_in {
                                grads[i].0[o * l.fan_in + k] += go * xin[r * l.fan_in + k];
                                dx[r * l.fan_in + k] += go * l.w[o * l.fan_in + k];
                            }
                        }
                    }
                    g = dx;
                }
            }
        }
        let scale = 1.0 / cfg.batch as f32;
        for (l, (gw, gb)) in layers.iter_mut().zip(&grads) {
            l.w.iter_mut().zip(gw).for_each(|(w, g)| *w -= cfg.lr * g * scale);
            l.b.iter_mut().zip(gb).for_each(|(b, g)| *b -= cfg.lr * g * scale);
        }
        steps += 1;
        if (step + 1) % cfg.eval_every == 0 {
            let all: Vec<usize> = (0..valid.rows).collect();
            let (x, t) = valid.select(&all);
            let y = forward(&layers, &x).pop().unwrap();
            let loss = y.iter().zip(&t).map(|(a, b)| (a - b) * (a - b)).sum::<f32>() / (valid.rows * D_OUT) as f32;
            if stopper.should_stop(loss) {
                break;
            }
        }
    }
    (layers.into_iter().map(|l| (l.w, l.b)).collect(), steps)
}
