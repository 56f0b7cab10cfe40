//! The model's shape, the data, and the serial training the pipeline must match.

use crate::layer::{mse, noise, Layer};

/// Layer widths: stage s maps dims[s] -> dims[s + 1].
pub fn dims(width: usize, stages: usize) -> Vec<usize> {
    (0..=stages).map(|s| width + (2 * s) % 3).collect()
}

pub fn layers(seed: u64, dims: &[usize]) -> Vec<Layer> {
    let n = dims.len() - 1;
    dims.windows(2).enumerate().map(|(s, d)| Layer::init(seed, s, d[0], d[1], s + 1 < n)).collect()
}

/// Samples per micro-batch: `batch` split as evenly as possible.
pub fn micro_rows(batch: usize, micro: usize) -> Vec<usize> {
    (0..micro).map(|k| batch / micro + usize::from(k < batch % micro)).collect()
}

/// The training set is this many batches, visited in turn.
pub const BATCHES: usize = 3;

/// The inputs (`batch x d_in`) and targets (`batch x d_out`) of step `step`.
pub fn batch(seed: u64, step: usize, batch: usize, d_in: usize, d_out: usize) -> (Vec<f64>, Vec<f64>) {
    let step = step % BATCHES;
    let x: Vec<f64> = (0..batch * d_in).map(|k| noise(seed, (step * batch + k / d_in) as u64, (k % d_in) as u64)).collect();
    let t = x
        .chunks(d_in)
        .flat_map(|row| (0..d_out).map(move |k| (1.5 * row[k % d_in]).sin() + 0.3 * row[(k + 1) % d_in]))
        .collect();
    (x, t)
}

pub struct Hyper {
    pub batch: usize,
    pub micro: usize,
    pub steps: usize,
    pub lr: f64,
    pub clip: f64,
    pub stop_below: f64,
    pub seed: u64,
}

/// Trains the whole model in one process: (final layers, loss per step).
pub fn train_serial(h: &Hyper, dims: &[usize]) -> (Vec<Layer>, Vec<f64>) {
    let mut model = layers(h.seed, dims);
    let rows = micro_rows(h.batch, h.micro);
    let mut losses = Vec::new();
    for step in 0..h.steps {
        let (x, t) = batch(h.seed, step, h.batch, dims[0], dims[dims.len() - 1]);
        let mut grads: Vec<(Vec<f64>, Vec<f64>)> = model.iter().map(|l| (vec![0.0; l.w.len()], vec![0.0; l.b.len()])).collect();
        let mut acts: Vec<Vec<Vec<f64>>> = Vec::new(); // per micro-batch: input of each layer, then the output
        let mut loss = 0.0;
        let mut start = 0;
        let mut dys = Vec::new();
        for &r in &rows {
            let mut a = vec![x[start * dims[0]..(start + r) * dims[0]].to_vec()];
            for l in &model {
                let y = l.forward(a.last().unwrap());
                a.push(y);
            }
            let d = dims[dims.len() - 1];
            let (l, dy) = mse(a.last().unwrap(), &t[start * d..(start + r) * d], h.batch);
            loss += l;
            dys.push(dy);
            acts.push(a);
            start += r;
        }
        // Backward, micro-batches in reverse as the pipeline does.
        for mb in (0..rows.len()).rev() {
            let mut dy = dys[mb].clone();
            for (s, l) in model.iter().enumerate().rev() {
                let (gw, gb) = &mut grads[s];
                dy = l.backward(&acts[mb][s], &acts[mb][s + 1], &dy, gw, gb);
            }
        }
        let norm = grads.iter().map(|(gw, gb)| Layer::grad_sq_norm(gw, gb)).fold(0.0, |a, b| a + b).sqrt();
        let scale = if h.clip > 0.0 && norm > h.clip { h.clip / norm } else { 1.0 };
        for (l, (gw, gb)) in model.iter_mut().zip(&grads) {
            let gw: Vec<f64> = gw.iter().map(|g| g * scale).collect();
            let gb: Vec<f64> = gb.iter().map(|g| g * scale).collect();
            l.sgd(&gw, &gb, h.lr);
        }
        losses.push(loss);
        if loss < h.stop_below {
            break;
        }
    }
    (model, losses)
}
