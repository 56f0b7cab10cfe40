//! One tp shard of the MLP y = tanh(x W1 + b1) W2 + b2, and the dense kernels it needs.

use crate::parallel::Grads;

/// c (m × n) = a (m × k) · bᵀ where b is n × k.
pub fn matmul_nt(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
    (0..m * n).map(|ij| (0..k).map(|p| a[ij / n * k + p] * b[ij % n * k + p]).sum()).collect()
}

/// c (m × n) = a (m × k) · b where b is k × n.
pub fn matmul(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for p in 0..k {
            let x = a[i * k + p];
            c[i * n..(i + 1) * n].iter_mut().zip(&b[p * n..(p + 1) * n]).for_each(|(c, b)| *c += x * b);
        }
    }
    c
}

/// c (k × n) = aᵀ · b where a is m × k and b is m × n.
pub fn matmul_tn(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut c = vec![0.0; k * n];
    for i in 0..m {
        for p in 0..k {
            let x = a[i * k + p];
            c[p * n..(p + 1) * n].iter_mut().zip(&b[i * n..(i + 1) * n]).for_each(|(c, b)| *c += x * b);
        }
    }
    c
}

/// The shard's rows of W1ᵀ, b1 and W2 (the column-parallel and row-parallel halves), and
/// the output bias b2, replicated on every tp rank.
pub struct Model {
    pub hidden: usize,
    pub rows: usize,
    pub w1t: Vec<f64>,
    pub b1: Vec<f64>,
    pub w2: Vec<f64>,
    pub b2: Vec<f64>,
}

impl Model {
    pub fn shard_of(full: &Model, rows: (usize, usize)) -> Model {
        let (r0, r1, h) = (rows.0, rows.1, full.hidden);
        Model {
            hidden: h,
            rows: r1 - r0,
            w1t: full.w1t[r0 * h..r1 * h].to_vec(),
            b1: full.b1[r0..r1].to_vec(),
            w2: full.w2[r0 * h..r1 * h].to_vec(),
            b2: full.b2.clone(),
        }
    }

    /// Column-parallel then activation: tanh(x · W1[:, shard] + b1[shard]) for `m` rows.
    pub fn hidden_act(&self, x: &[f64], m: usize) -> Vec<f64> {
        let z = matmul_nt(x, &self.w1t, m, self.hidden, self.rows);
        z.iter().enumerate().map(|(ij, z)| (z + self.b1[ij % self.rows]).tanh()).collect()
    }

    /// Row-parallel: this shard's partial sum of the output (b2 is added after the sum).
    pub fn partial_out(&self, act: &[f64], m: usize) -> Vec<f64> {
        matmul(act, &self.w2, m, self.rows, self.hidden)
    }

    pub fn add_bias(&self, y: &mut [f64]) {
        y.chunks_mut(self.hidden).for_each(|row| row.iter_mut().zip(&self.b2).for_each(|(y, b)| *y += b));
    }

    /// Gradients of this shard's W1ᵀ, b1 and W2 from the gathered output gradient
    /// (b2's comes from the sequence-parallel rows: see `bias_grad`).
    pub fn backward(&self, x: &[f64], act: &[f64], dy: &[f64], m: usize) -> Grads {
        let w2 = matmul_tn(act, dy, m, self.rows, self.hidden);
        let da = matmul_nt(dy, &self.w2, m, self.hidden, self.rows);
        let dz: Vec<f64> = da.iter().zip(act).map(|(g, a)| g * (1.0 - a * a)).collect();
        let w1t = matmul_tn(&dz, x, m, self.rows, self.hidden);
        let b1 = (0..self.rows).map(|k| dz.iter().skip(k).step_by(self.rows.max(1)).sum()).collect();
        Grads::from([("w1t", w1t), ("b1", b1), ("w2", w2)])
    }

    /// Column sums of an output gradient: the b2 gradient of those rows.
    pub fn bias_grad(&self, dy: &[f64]) -> Vec<f64> {
        (0..self.hidden).map(|c| dy.iter().skip(c).step_by(self.hidden).sum()).collect()
    }

    pub fn sgd(&mut self, grads: &Grads, lr: f64) {
        for (name, g) in grads {
            let w = match *name {
                "w1t" => &mut self.w1t,
                "b1" => &mut self.b1,
                "w2" => &mut self.w2,
                "b2" => &mut self.b2,
                other => panic!("no parameter {other}"),
            };
            w.iter_mut().zip(g).for_each(|(w, d)| *w -= lr * d);
        }
    }
}
