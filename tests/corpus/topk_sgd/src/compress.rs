//! Top-k sparsification with error feedback.

/// A sparse gradient: positions and values.
#[derive(Debug, Clone, Default)]
pub struct Sparse {
    pub idx: Vec<u32>,
    pub val: Vec<f32>,
}

/// Error-feedback compressor: what was not sent is added to the next step's gradient.
pub struct TopK {
    k: usize,
    residual: Vec<f32>,
}

impl TopK {
    pub fn new(k: usize, dim: usize) -> TopK {
        TopK { k, residual: vec![0.0; dim] }
    }

    /// Adds `lr · grad` to the residual, takes out its (at most) k largest non-zero
    /// entries by magnitude, and returns them.
    pub fn compress(&mut self, grad: &[f32], lr: f32) -> Sparse {
        for (r, g) in self.residual.iter_mut().zip(grad) {
            *r += lr * g;
        }
        let mut order: Vec<usize> = (0..self.residual.len()).filter(|&i| self.residual[i].abs() > 1e-7).collect();
        order.sort_by(|&a, &b| self.residual[b].abs().total_cmp(&self.residual[a].abs()).then(a.cmp(&b)));
        order.truncate(self.k);
        order.sort();
        let mut out = Sparse::default();
        for i in order {
            out.idx.push(i as u32);
            out.val.push(self.residual[i]);
            self.residual[i] = 0.0;
        }
        out
    }
}

/// Adds every rank's sparse contribution into a dense update, in rank order.
pub fn densify(idx: &[u32], val: &[f32], dim: usize) -> Vec<f32> {
    let mut dense = vec![0.0f32; dim];
    for (&i, &v) in idx.iter().zip(val) {
        dense[i as usize] += v;
    }
    dense
}
