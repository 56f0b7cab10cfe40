//! Dense tanh layers, their backward pass, and a pipeline stage holding a run of them.

use crate::data::Rng;

pub fn layer_weights(layer: usize, width: usize) -> Vec<f64> {
    Rng::new(77 + layer as u64).vec(width * width, 0.5)
}

/// y = tanh(x · w), x is rows × width.
pub fn forward(x: &[f64], w: &[f64], rows: usize, width: usize) -> Vec<f64> {
    let mut y = vec![0.0; rows * width];
    for i in 0..rows {
        for k in 0..width {
            let xv = x[i * width + k];
            for j in 0..width {
                y[i * width + j] += xv * w[k * width + j];
            }
        }
    }
    y.iter_mut().for_each(|v| *v = v.tanh());
    y
}

/// Given dL/dy, returns (dL/dx, dL/dw).
pub fn backward(x: &[f64], y: &[f64], w: &[f64], dy: &[f64], rows: usize, width: usize) -> (Vec<f64>, Vec<f64>) {
    let dz: Vec<f64> = dy.iter().zip(y).map(|(g, y)| g * (1.0 - y * y)).collect();
    let mut dx = vec![0.0; rows * width];
    let mut dw = vec![0.0; width * width];
    for i in 0..rows {
        for k in 0..width {
            let mut s = 0.0;
            for j in 0..width {
                s += dz[i * width + j] * w[k * width + j];
                dw[k * width + j] += x[i * width + k] * dz[i * width + j];
            }
            dx[i * width + k] = s;
        }
    }
    (dx, dw)
}

/// 0.5‖y − t‖² and its gradient.
pub fn loss(y: &[f64], t: &[f64]) -> (f64, Vec<f64>) {
    let d: Vec<f64> = y.iter().zip(t).map(|(a, b)| a - b).collect();
    (0.5 * d.iter().map(|v| v * v).sum::<f64>(), d)
}

/// The first layer and number of layers of stage `s` of `p` over `layers`.
pub fn stage_layers(layers: usize, p: usize, s: usize) -> (usize, usize) {
    let base = layers / p;
    let extra = layers % p;
    (s * base + s.min(extra), base + usize::from(s < extra))
}

/// A contiguous run of layers, with the activations it saved per micro-batch.
pub struct Stage {
    pub first: usize,
    pub weights: Vec<Vec<f64>>,
    pub grads: Vec<Vec<f64>>,
    rows: usize,
    width: usize,
    /// Per micro-batch: the input of every layer and the stage's output.
    saved: Vec<Option<Vec<Vec<f64>>>>,
}

impl Stage {
    pub fn new(first: usize, count: usize, rows: usize, width: usize, micro: usize) -> Stage {
        Stage {
            first,
            weights: (first..first + count).map(|l| layer_weights(l, width)).collect(),
            grads: vec![vec![0.0; width * width]; count],
            rows,
            width,
            saved: (0..micro).map(|_| None).collect(),
        }
    }

    pub fn act_len(&self) -> usize {
        self.rows * self.width
    }

    pub fn forward(&mut self, mb: usize, x: Vec<f64>) -> Vec<f64> {
        let mut acts = vec![x];
        for w in &self.weights {
            let y = forward(acts.last().unwrap(), w, self.rows, self.width);
            acts.push(y);
        }
        let out = acts.last().unwrap().clone();
        self.saved[mb] = Some(acts);
        out
    }

    pub fn backward(&mut self, mb: usize, dy: Vec<f64>) -> Vec<f64> {
        let acts = self.saved[mb].take().expect("forward before backward");
        let mut g = dy;
        for l in (0..self.weights.len()).rev() {
            let (dx, dw) = backward(&acts[l], &acts[l + 1], &self.weights[l], &g, self.rows, self.width);
            self.grads[l].iter_mut().zip(&dw).for_each(|(a, b)| *a += b);
            g = dx;
        }
        g
    }

    pub fn step(&mut self, lr: f64) {
        for (w, g) in self.weights.iter_mut().zip(self.grads.iter_mut()) {
            w.iter_mut().zip(g.iter()).for_each(|(w, g)| *w -= lr * g);
            g.iter_mut().for_each(|g| *g = 0.0);
        }
    }
}
