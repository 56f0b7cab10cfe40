//! Softmax attention: the serial reference and the blockwise (online softmax) form.

use crate::tensor::{scores, Mat};

/// softmax(Q·Kᵀ/√d)·V over the whole sequence, in one process.
pub fn full_attention(q: &Mat, k: &Mat, v: &Mat) -> Mat {
    let scale = 1.0 / (q.cols as f32).sqrt();
    let s = scores(q, k, scale);
    let mut out = Mat::zeros(q.rows, v.cols);
    for i in 0..q.rows {
        let row = &s.data[i * k.rows..(i + 1) * k.rows];
        let m = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let p: Vec<f32> = row.iter().map(|x| (x - m).exp()).collect();
        let z: f32 = p.iter().sum();
        let o = out.row_mut(i);
        for (j, pj) in p.iter().enumerate() {
            for (c, oc) in o.iter_mut().enumerate() {
                *oc += pj / z * v.data[j * v.cols + c];
            }
        }
    }
    out
}

/// Running state of the online softmax for one block of queries: per row the running
/// max `m`, the running normaliser `l`, and the unnormalised output `acc`.
pub struct OnlineSoftmax {
    q: Mat,
    scale: f32,
    m: Vec<f32>,
    l: Vec<f32>,
    acc: Mat,
}

impl OnlineSoftmax {
    pub fn new(q: Mat) -> Self {
        let rows = q.rows;
        let scale = 1.0 / (q.cols as f32).sqrt();
        let acc = Mat::zeros(rows, q.cols);
        OnlineSoftmax { q, scale, m: vec![f32::NEG_INFINITY; rows], l: vec![0.0; rows], acc }
    }

    /// Fold in one block of keys and values.
    pub fn absorb(&mut self, k: &Mat, v: &Mat) {
        if k.rows == 0 {
            return;
        }
        let s = scores(&self.q, k, self.scale);
        for i in 0..self.q.rows {
            let row = &s.data[i * k.rows..(i + 1) * k.rows];
            let block_max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let new_m = self.m[i].max(block_max);
            let correction = (self.m[i] - new_m).exp();
            self.l[i] *= correction;
            let acc = self.acc.row_mut(i);
            acc.iter_mut().for_each(|a| *a *= correction);
            for (j, &sij) in row.iter().enumerate() {
                let p = (sij - new_m).exp();
                self.l[i] += p;
                acc.iter_mut().zip(v.row(j)).for_each(|(a, vj)| *a += p * vj);
            }
            self.m[i] = new_m;
        }
    }

    /// Normalised output rows.
    pub fn finish(self) -> Mat {
        let mut out = self.acc;
        for (i, l) in self.l.iter().enumerate() {
            out.row_mut(i).iter_mut().for_each(|x| *x /= l);
        }
        out
    }
}
