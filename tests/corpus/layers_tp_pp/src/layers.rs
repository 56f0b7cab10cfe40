//! Megatron-style layers: a column-parallel linear (W split by output columns over tp),
//! a tanh activation, and a row-parallel linear (W split by input rows over tp, the
//! partial outputs summed over tp).

use crate::parallel::ParallelState;
use crate::serial::Weights;
use crate::tensor::{columns, matmul, matmul_nt, matmul_tn, max_rel_diff};
use dist_runtime::prelude::*;

pub type LayerResult = Result<Vec<f32>, dist_runtime::Error>;

pub trait Layer {
    fn name(&self) -> String;
    fn forward(&mut self, x: &[f32], ctx: &ParallelState) -> LayerResult;
    fn backward(&mut self, dy: &[f32], ctx: &ParallelState) -> LayerResult;
    /// The gradient of this layer's parameters, if it has any.
    fn grad_mut(&mut self) -> Option<&mut Vec<f32>> {
        None
    }
    fn sgd(&mut self, _lr: f32) {}
    /// Largest relative difference between this shard and the serial weights.
    fn compare(&self, _reference: &Weights) -> f32 {
        0.0
    }
}

/// y = x · W[:, f0..f1]; backward all-reduces dx over tp.
pub struct ColumnParallelLinear {
    block: usize,
    in_dim: usize,
    out_local: usize,
    f0: usize,
    f1: usize,
    w: Vec<f32>,
    grad: Vec<f32>,
    x: Vec<f32>,
}

impl ColumnParallelLinear {
    pub fn from_full(block: usize, full: &[f32], in_dim: usize, out_dim: usize, tp: usize, t: usize) -> Self {
        let out_local = out_dim / tp;
        let (f0, f1) = (t * out_local, (t + 1) * out_local);
        let w = columns(full, in_dim, out_dim, f0, f1);
        ColumnParallelLinear { block, in_dim, out_local, f0, f1, grad: vec![0.0; w.len()], w, x: Vec::new() }
    }
}

impl Layer for ColumnParallelLinear {
    fn name(&self) -> String {
        format!("block{}.fc1[{}..{}]", self.block, self.f0, self.f1)
    }

    fn forward(&mut self, x: &[f32], _ctx: &ParallelState) -> LayerResult {
        let rows = x.len() / self.in_dim;
        self.x = x.to_vec();
        Ok(matmul(x, &self.w, rows, self.in_dim, self.out_local))
    }

    fn backward(&mut self, dy: &[f32], ctx: &ParallelState) -> LayerResult {
        let rows = dy.len() / self.out_local;
        self.grad = matmul_tn(&self.x, dy, rows, self.in_dim, self.out_local);
        let mut dx = matmul_nt(dy, &self.w, rows, self.out_local, self.in_dim);
        ctx.tp.all_reduce(&mut dx, ReduceOp::Sum)?;
        Ok(dx)
    }

    fn grad_mut(&mut self) -> Option<&mut Vec<f32>> {
        Some(&mut self.grad)
    }

    fn sgd(&mut self, lr: f32) {
        for (w, g) in self.w.iter_mut().zip(&self.grad) {
            *w -= lr * g;
        }
    }

    fn compare(&self, reference: &Weights) -> f32 {
        let full = &reference.w1[self.block];
        let want = columns(full, self.in_dim, full.len() / self.in_dim, self.f0, self.f1);
        max_rel_diff(&self.w, &want)
    }
}

/// y = Σ_tp x_local · W[f0..f1, :]
pub struct RowParallelLinear {
    block: usize,
    in_local: usize,
    out_dim: usize,
    f0: usize,
    f1: usize,
    w: Vec<f32>,
    grad: Vec<f32>,
    x: Vec<f32>,
}

impl RowParallelLinear {
    pub fn from_full(block: usize, full: &[f32], in_dim: usize, out_dim: usize, tp: usize, t: usize) -> Self {
        let in_local = in_dim / tp;
        let (f0, f1) = (t * in_local, (t + 1) * in_local);
        let w = full[f0 * out_dim..f1 * out_dim].to_vec();
        RowParallelLinear { block, in_local, out_dim, f0, f1, grad: vec![0.0; w.len()], w, x: Vec::new() }
    }
}

impl Layer for RowParallelLinear {
    fn name(&self) -> String {
        format!("block{}.fc2[{}..{}]", self.block, self.f0, self.f1)
    }

    fn forward(&mut self, x: &[f32], ctx: &ParallelState) -> LayerResult {
        let rows = x.len() / self.in_local;
        self.x = x.to_vec();
        let mut y = matmul(x, &self.w, rows, self.in_local, self.out_dim);
        ctx.tp.all_reduce(&mut y, ReduceOp::Sum)?;
        Ok(y)
    }

    fn backward(&mut self, dy: &[f32], _ctx: &ParallelState) -> LayerResult {
        let rows = dy.len() / self.out_dim;
        self.grad = matmul_tn(&self.x, dy, rows, self.in_local, self.out_dim);
        Ok(matmul_nt(dy, &self.w, rows, self.out_dim, self.in_local))
    }

    fn grad_mut(&mut self) -> Option<&mut Vec<f32>> {
        Some(&mut self.grad)
    }

    fn sgd(&mut self, lr: f32) {
        for (w, g) in self.w.iter_mut().zip(&self.grad) {
            *w -= lr * g;
        }
    }

    fn compare(&self, reference: &Weights) -> f32 {
        let full = &reference.w2[self.block];
        max_rel_diff(&self.w, &full[self.f0 * self.out_dim..self.f1 * self.out_dim])
    }
}

/// tanh, elementwise; needs no communication.
#[derive(Default)]
pub struct Tanh {
    y: Vec<f32>,
}

impl Layer for Tanh {
    fn name(&self) -> String {
        "tanh".to_string()
    }

    fn forward(&mut self, x: &[f32], _ctx: &ParallelState) -> LayerResult {
        self.y = x.iter().map(|v| v.tanh()).collect();
        Ok(self.y.clone())
    }

    fn backward(&mut self, dy: &[f32], _ctx: &ParallelState) -> LayerResult {
        Ok(dy.iter().zip(&self.y).map(|(d, y)| d * (1.0 - y * y)).collect())
    }
}
