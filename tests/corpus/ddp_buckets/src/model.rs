//! A small tanh MLP on plain `Vec<f64>`: params[2l] is layer l's weight (din × dout,
//! row-major), params[2l + 1] its bias.

use crate::data::Rng;

pub struct Mlp {
    pub dims: Vec<usize>,
    pub params: Vec<Vec<f64>>,
}

/// What the backward pass needs from the forward pass: the input of every layer.
pub struct Tape {
    pub rows: usize,
    pub acts: Vec<Vec<f64>>,
}

impl Mlp {
    pub fn new(dims: &[usize], seed: u64) -> Mlp {
        let mut rng = Rng::new(seed);
        let params = dims
            .windows(2)
            .flat_map(|w| {
                let scale = (1.0 / w[0] as f64).sqrt();
                let weight: Vec<f64> = (0..w[0] * w[1]).map(|_| rng.uniform() * scale).collect();
                [weight, vec![0.0; w[1]]]
            })
            .collect();
        Mlp { dims: dims.to_vec(), params }
    }

    pub fn num_layers(&self) -> usize {
        self.dims.len() - 1
    }

    /// Element count of every parameter tensor, in parameter order.
    pub fn shapes(&self) -> Vec<usize> {
        self.params.iter().map(Vec::len).collect()
    }

    pub fn zero_grads(&self) -> Vec<Vec<f64>> {
        self.params.iter().map(|p| vec![0.0; p.len()]).collect()
    }

    pub fn forward(&self, x: &[f64], rows: usize) -> Tape {
        let mut acts = vec![x.to_vec()];
        for l in 0..self.num_layers() {
            let (din, dout) = (self.dims[l], self.dims[l + 1]);
            let (w, b) = (&self.params[2 * l], &self.params[2 * l + 1]);
            let input = &acts[l];
            let mut out = vec![0.0; rows * dout];
            for i in 0..rows {
                for j in 0..dout {
                    let z = b[j] + (0..din).map(|k| input[i * din + k] * w[k * dout + j]).sum::<f64>();
                    out[i * dout + j] = if l + 1 < self.num_layers() { z.tanh() } else { z };
                }
            }
            acts.push(out);
        }
        Tape { rows, acts }
    }

    /// Sum of squared errors and dL/dpred for L = Σ (pred − y)².
    pub fn output_grad(&self, tape: &Tape, y: &[f64]) -> (f64, Vec<f64>) {
        let pred = tape.acts.last().expect("forward ran");
        let dy: Vec<f64> = pred.iter().zip(y).map(|(p, t)| 2.0 * (p - t)).collect();
        (dy.iter().map(|d| d * d / 4.0).sum(), dy)
    }

    pub fn sse(&self, x: &[f64], y: &[f64], rows: usize) -> f64 {
        let tape = self.forward(x, rows);
        self.output_grad(&tape, y).0
    }

    /// Back-propagates through layer `l`: adds its weight and bias gradients into `grads`
    /// and returns the gradient at the pre-activation of layer `l − 1`.
    pub fn backward_layer(&self, l: usize, tape: &Tape, delta: &[f64], grads: &mut [Vec<f64>]) -> Vec<f64> {
        let (din, dout, rows) = (self.dims[l], self.dims[l + 1], tape.rows);
        let input = &tape.acts[l];
        for i in 0..rows {
            for j in 0..dout {
                let d = delta[i * dout + j];
                grads[2 * l + 1][j] += d;
                for k in 0..din {
                    grads[2 * l][k * dout + j] += input[i * din + k] * d;
                }
            }
        }
        if l == 0 {
            return Vec::new();
        }
        let w = &self.params[2 * l];
        (0..rows * din)
            .map(|idx| {
                let (i, k) = (idx / din, idx % din);
                let back: f64 = (0..dout).map(|j| delta[i * dout + j] * w[k * dout + j]).sum();
                back * (1.0 - input[idx] * input[idx])
            })
            .collect()
    }

    /// Local backward pass with no communication (the accumulation micro-steps).
    pub fn backward(&self, tape: &Tape, dy: Vec<f64>, grads: &mut [Vec<f64>]) {
        (0..self.num_layers()).rev().fold(dy, |delta, l| self.backward_layer(l, tape, &delta, grads));
    }

    pub fn sgd(&mut self, grads: &[Vec<f64>], scale: f64) {
        for (p, g) in self.params.iter_mut().zip(grads) {
            p.iter_mut().zip(g).for_each(|(w, g)| *w -= scale * g);
        }
    }

    pub fn flat(&self) -> Vec<f64> {
        self.params.concat()
    }
}
