//! The model: a stack of layers, data-parallel over `Dp`.

use dist_runtime::prelude::*;
use dist_runtime::Result;

use crate::data::{shard, Dataset, D_OUT};
use crate::layers::{ColumnParallelLinear, Layer, RowParallelLinear, Tanh, Tp};

dist_runtime::group!(pub Dp);

pub struct Model {
    layers: Vec<Box<dyn Layer>>,
    dp: Comm<Dp>,
}

impl Model {
    /// Column, tanh, row, tanh, column, tanh, row: two Megatron MLP blocks.
    pub fn build(dp: Comm<Dp>, tp: &Comm<Tp>, init: &[(Vec<f32>, Vec<f32>, usize, usize)]) -> Model {
        let mut layers: Vec<Box<dyn Layer>> = Vec::new();
        for (i, (w, b, fan_in, fan_out)) in init.iter().enumerate() {
            if i % 2 == 0 {
                layers.push(Box::new(ColumnParallelLinear::new(tp, w, b, *fan_in, *fan_out)));
                layers.push(Box::new(Tanh::default()));
            } else {
                layers.push(Box::new(RowParallelLinear::new(tp.clone(), w, b, *fan_in, *fan_out)));
                if i + 1 < init.len() {
                    layers.push(Box::new(Tanh::default()));
                }
            }
        }
        Model { layers, dp }
    }

    pub fn forward(&mut self, x: &[f32]) -> Result<Vec<f32>> {
        self.layers.iter_mut().try_fold(x.to_vec(), |h, layer| layer.forward(&h))
    }

    pub fn backward(&mut self, dy: &[f32]) -> Result<()> {
        let mut g = dy.to_vec();
        for layer in self.layers.iter_mut().rev() {
            g = layer.backward(&g)?;
        }
        Ok(())
    }

    pub fn zero_grad(&mut self) {
        for layer in &mut self.layers {
            for p in layer.params() {
                p.grad.fill(0.0);
            }
        }
    }

    /// Sums the gradients over the data-parallel replicas, then scales them.
    pub fn all_reduce_grads(&mut self, scale: f32) -> Result<()> {
        for layer in &mut self.layers {
            for p in layer.params() {
                self.dp.all_reduce(p.grad, ReduceOp::Sum)?;
                p.grad.iter_mut().for_each(|g| *g *= scale);
            }
        }
        Ok(())
    }

    pub fn sgd(&mut self, lr: f32) {
        for layer in &mut self.layers {
            for p in layer.params() {
                p.value.iter_mut().zip(p.grad.iter()).for_each(|(w, g)| *w -= lr * g);
            }
        }
    }

    /// Mean squared error over the whole validation set: each replica takes its share
    /// of the rows, and the sums meet over `Dp`.
    pub fn validation_loss(&mut self, valid: &Dataset) -> Result<f32> {
        let (lo, hi) = shard(valid.rows, self.dp.size(), self.dp.rank());
        let rows: Vec<usize> = (lo..hi).collect();
        let (x, t) = valid.select(&rows);
        let y = self.forward(&x)?;
        let mut sum = [y.iter().zip(&t).map(|(a, b)| (a - b) * (a - b)).sum::<f32>()];
        self.dp.all_reduce(&mut sum, ReduceOp::Sum)?;
        Ok(sum[0] / (valid.rows * D_OUT) as f32)
    }

    /// Every linear layer's full weights, reassembled over tp.
    pub fn full_weights(&self) -> Result<Vec<(Vec<f32>, Vec<f32>)>> {
        let mut out = Vec::new();
        for layer in &self.layers {
            if let Some(wb) = layer.full_weights()? {
                out.push(wb);
            }
        }
        Ok(out)
    }

    pub fn describe(&self) -> String {
        self.layers.iter().map(|l| l.name()).collect::<Vec<_>>().join(" -> ")
    }
}

/// Stops training once the validation loss has not improved for `patience` evaluations.
pub struct EarlyStopping {
    best: f32,
    bad: usize,
    patience: usize,
}

impl EarlyStopping {
    pub fn new(patience: usize) -> Self {
        EarlyStopping { best: f32::INFINITY, bad: 0, patience }
    }

    pub fn should_stop(&mut self, loss: f32) -> bool {
        if loss < self.best * 0.999 {
            self.best = loss;
            self.bad = 0;
        } else {
            self.bad += 1;
        }
        self.bad >= self.patience
    }
}
