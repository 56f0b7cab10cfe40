//! Layers of a Megatron-style MLP. Parallel layers keep their own handle to the
//! tensor-parallel communicator.

use dist_runtime::prelude::*;
use dist_runtime::Result;

use crate::data::shard;

dist_runtime::group!(pub Tp);

/// A trainable parameter and its accumulated gradient.
pub struct Param<'a> {
    pub value: &'a mut [f32],
    pub grad: &'a mut [f32],
}

pub trait Layer {
    /// `x` holds whole rows; the number of rows is `x.len() / input width`.
    fn forward(&mut self, x: &[f32]) -> Result<Vec<f32>>;
    /// Takes dL/dy of the last forward, accumulates parameter gradients, returns dL/dx.
    fn backward(&mut self, dy: &[f32]) -> Result<Vec<f32>>;
    fn params(&mut self) -> Vec<Param<'_>> {
        Vec::new()
    }
    /// The layer's full weight and bias, reassembled from the shards (for checking).
    fn full_weights(&self) -> Result<Option<(Vec<f32>, Vec<f32>)>> {
        Ok(None)
    }
    fn name(&self) -> &'static str;
}

/// y = x Wᵀ + b, with W's output rows split over tp: each rank produces its slice of y.
/// Backward sums the input gradient over tp (Megatron's `f`).
pub struct ColumnParallelLinear {
    tp: Comm<Tp>,
    in_f: usize,
    out_f: usize,
    w: Vec<f32>,
    b: Vec<f32>,
    gw: Vec<f32>,
    gb: Vec<f32>,
    saved_x: Vec<f32>,
}

impl ColumnParallelLinear {
    pub fn new(tp: &Comm<Tp>, w: &[f32], b: &[f32], in_f: usize, out_f: usize) -> Self {
        let (o0, o1) = shard(out_f, tp.size(), tp.rank());
        let w = w[o0 * in_f..o1 * in_f].to_vec();
        let b = b[o0..o1].to_vec();
        let (gw, gb) = (vec![0.0; w.len()], vec![0.0; b.len()]);
        ColumnParallelLinear { tp: tp.clone(), in_f, out_f, w, b, gw, gb, saved_x: Vec::new() }
    }
    fn local_out(&self) -> usize {
        self.b.len()
    }
}

impl Layer for ColumnParallelLinear {
    fn forward(&mut self, x: &[f32]) -> Result<Vec<f32>> {
        let (rows, ol) = (x.len() / self.in_f, self.local_out());
        let mut y = vec![0.0; rows * ol];
        for r in 0..rows {
            let xr = &x[r * self.in_f..(r + 1) * self.in_f];
            for j in 0..ol {
                let wj = &self.w[j * self.in_f..(j + 1) * self.in_f];
                y[r * ol + j] = self.b[j] + xr.iter().zip(wj).map(|(a, b)| a * b).sum::<f32>();
            }
        }
        self.saved_x = x.to_vec();
        Ok(y)
    }

    fn backward(&mut self, dy: &[f32]) -> Result<Vec<f32>> {
        let ol = self.local_out();
        let rows = dy.len() / ol;
        let mut dx = vec![0.0; rows * self.in_f];
        for r in 0..rows {
            for j in 0..ol {
                let g = dy[r * ol + j];
                self.gb[j] += g;
                for k in 0..self.in_f {
                    self.gw[j * self.in_f + k] += g * self.saved_x[r * self.in_f + k];
                    dx[r * self.in_f + k] += g * self.w[j * self.in_f + k];
                }
            }
        }
        // Every tp rank holds a partial input gradient: sum them.
        self.tp.all_reduce(&mut dx, ReduceOp::Sum)?;
        Ok(dx)
    }

    fn params(&mut self) -> Vec<Param<'_>> {
        vec![Param { value: &mut self.w, grad: &mut self.gw }, Param { value: &mut self.b, grad: &mut self.gb }]
    }

    fn full_weights(&self) -> Result<Option<(Vec<f32>, Vec<f32>)>> {
        let mut w = vec![0.0; self.w.len() * self.tp.size()];
        let mut b = vec![0.0; self.out_f];
        self.tp.all_gather(&self.w, &mut w)?;
        self.tp.all_gather(&self.b, &mut b)?;
        Ok(Some((w, b)))
    }

    fn name(&self) -> &'static str {
        "column-parallel linear"
    }
}

/// y = x Wᵀ + b, with W's input columns split over tp: each rank takes its slice of x
/// and the partial outputs are summed over tp (Megatron's `g`). The bias is replicated.
pub struct RowParallelLinear {
    tp: Comm<Tp>,
    in_local: usize,
    out_f: usize,
    w: Vec<f32>,
    b: Vec<f32>,
    gw: Vec<f32>,
    gb: Vec<f32>,
    saved_x: Vec<f32>,
}

impl RowParallelLinear {
    pub fn new(tp: Comm<Tp>, w: &[f32], b: &[f32], in_f: usize, out_f: usize) -> Self {
        let (i0, i1) = shard(in_f, tp.size(), tp.rank());
        let w: Vec<f32> = (0..out_f).flat_map(|o| w[o * in_f + i0..o * in_f + i1].to_vec()).collect();
        let (gw, gb) = (vec![0.0; w.len()], vec![0.0; out_f]);
        RowParallelLinear { tp, in_local: i1 - i0, out_f, w, b: b.to_vec(), gw, gb, saved_x: Vec::new() }
    }
}

impl Layer for RowParallelLinear {
    fn forward(&mut self, x: &[f32]) -> Result<Vec<f32>> {
        let rows = x.len() / self.in_local;
        let mut y = vec![0.0; rows * self.out_f];
        for r in 0..rows {
            let xr = &x[r * self.in_local..(r + 1) * self.in_local];
            for o in 0..self.out_f {
                let wo = &self.w[o * self.in_local..(o + 1) * self.in_local];
                y[r * self.out_f + o] = xr.iter().zip(wo).map(|(a, b)| a * b).sum();
            }
        }
        self.tp.all_reduce(&mut y, ReduceOp::Sum)?;
        for row in y.chunks_mut(self.out_f) {
            row.iter_mut().zip(&self.b).for_each(|(v, b)| *v += b);
        }
        self.saved_x = x.to_vec();
        Ok(y)
    }

    fn backward(&mut self, dy: &[f32]) -> Result<Vec<f32>> {
        let rows = dy.len() / self.out_f;
        let mut dx = vec![0.0; rows * self.in_local];
        for r in 0..rows {
            for o in 0..self.out_f {
                let g = dy[r * self.out_f + o];
                self.gb[o] += g;
                for k in 0..self.in_local {
                    self.gw[o * self.in_local + k] += g * self.saved_x[r * self.in_local + k];
                    dx[r * self.in_local + k] += g * self.w[o * self.in_local + k];
                }
            }
        }
        Ok(dx)
    }

    fn params(&mut self) -> Vec<Param<'_>> {
        vec![Param { value: &mut self.w, grad: &mut self.gw }, Param { value: &mut self.b, grad: &mut self.gb }]
    }

    fn full_weights(&self) -> Result<Option<(Vec<f32>, Vec<f32>)>> {
        let (t, il) = (self.tp.size(), self.in_local);
        let mut blocks = vec![0.0; self.w.len() * t];
        self.tp.all_gather(&self.w, &mut blocks)?;
        // blocks[p] is out_f × il for tp rank p; interleave into out_f × (il · t).
        let block = self.out_f * il;
        let w = (0..self.out_f)
            .flat_map(|o| (0..t).flat_map(move |p| (0..il).map(move |k| p * block + o * il + k)))
            .map(|i| blocks[i])
            .collect();
        Ok(Some((w, self.b.clone())))
    }

    fn name(&self) -> &'static str {
        "row-parallel linear"
    }
}

/// Element-wise tanh; no parameters, no communication.
#[derive(Default)]
pub struct Tanh {
    saved_y: Vec<f32>,
}

impl Layer for Tanh {
    fn forward(&mut self, x: &[f32]) -> Result<Vec<f32>> {
        self.saved_y = x.iter().map(|v| v.tanh()).collect();
        Ok(self.saved_y.clone())
    }
    fn backward(&mut self, dy: &[f32]) -> Result<Vec<f32>> {
        Ok(dy.iter().zip(&self.saved_y).map(|(g, y)| g * (1.0 - y * y)).collect())
    }
    fn name(&self) -> &'static str {
        "tanh"
    }
}
