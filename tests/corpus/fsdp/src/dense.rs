//! Dense layer math on flat parameters `[W (fan_in × fan_out, row-major) | b (fan_out)]`,
//! and the serial reference training.

pub fn init_params(fan_in: usize, fan_out: usize, seed: u64) -> Vec<f64> {
    let mut s = seed ^ 0x2545_F491_4F6C_DD1D;
    let scale = 1.0 / (fan_in as f64).sqrt();
    (0..fan_in * fan_out + fan_out)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s % 20_001) as f64 / 10_000.0 - 1.0) * scale
        })
        .collect()
}

/// `act(x·W + b)` for `rows` rows; `tanh` unless this is the output layer.
pub fn forward(x: &[f64], p: &[f64], fan_in: usize, fan_out: usize, rows: usize, linear: bool) -> Vec<f64> {
    let (w, b) = p.split_at(fan_in * fan_out);
    let mut y = Vec::with_capacity(rows * fan_out);
    for i in 0..rows {
        for j in 0..fan_out {
            let z = b[j] + (0..fan_in).map(|k| x[i * fan_in + k] * w[k * fan_out + j]).sum::<f64>();
            y.push(if linear { z } else { z.tanh() });
        }
    }
    y
}

/// (dL/dparams as a flat vector, dL/dx).
pub fn backward(x: &[f64], y: &[f64], p: &[f64], dy: &[f64], fan_in: usize, fan_out: usize, rows: usize, linear: bool) -> (Vec<f64>, Vec<f64>) {
    let w = &p[..fan_in * fan_out];
    let dz: Vec<f64> = if linear { dy.to_vec() } else { dy.iter().zip(y).map(|(g, y)| g * (1.0 - y * y)).collect() };
    let mut grad = vec![0.0; p.len()];
    let mut dx = vec![0.0; rows * fan_in];
    for i in 0..rows {
        for j in 0..fan_out {
            let d = dz[i * fan_out + j];
            grad[fan_in * fan_out + j] += d;
            for k in 0..fan_in {
                grad[k * fan_out + j] += x[i * fan_in + k] * d;
                dx[i * fan_in + k] += d * w[k * fan_out + j];
            }
        }
    }
    (grad, dx)
}

pub fn batch(rows: usize, fan_in: usize) -> (Vec<f64>, Vec<f64>) {
    let x: Vec<f64> = (0..rows * fan_in).map(|i| (i * 37 % 101) as f64 / 50.0 - 1.0).collect();
    let y = (0..rows).map(|r| (x[r * fan_in] * 2.0).sin() - 0.5 * x[r * fan_in + 1]).collect();
    (x, y)
}

/// SGD with momentum, elementwise (so it runs the same on a shard).
pub fn sgd_momentum(p: &mut [f64], g: &[f64], m: &mut [f64], lr: f64, beta: f64) {
    for ((p, g), m) in p.iter_mut().zip(g).zip(m.iter_mut()) {
        *m = beta * *m + g;
        *p -= lr * *m;
    }
}

/// The same training on one process: final flat parameters per layer and losses.
pub fn serial(dims: &[usize], rows: usize, steps: usize, lr: f64, beta: f64) -> (Vec<Vec<f64>>, Vec<f64>) {
    let nl = dims.len() - 1;
    let mut ps: Vec<Vec<f64>> = (0..nl).map(|l| init_params(dims[l], dims[l + 1], l as u64 + 1)).collect();
    let mut ms: Vec<Vec<f64>> = ps.iter().map(|p| vec![0.0; p.len()]).collect();
    let (x, t) = batch(rows, dims[0]);
    let mut losses = Vec::new();
    for _ in 0..steps {
        let mut acts = vec![x.clone()];
        for l in 0..nl {
            let h = forward(&acts[l], &ps[l], dims[l], dims[l + 1], rows, l + 1 == nl);
            acts.push(h);
        }
        let pred = &acts[nl];
        losses.push(pred.iter().zip(&t).map(|(p, t)| (p - t) * (p - t)).sum::<f64>() / rows as f64);
        let mut dy: Vec<f64> = pred.iter().zip(&t).map(|(p, t)| 2.0 * (p - t) / rows as f64).collect();
        for l in (0..nl).rev() {
            let (g, dx) = backward(&acts[l], &acts[l + 1], &ps[l], &dy, dims[l], dims[l + 1], rows, l + 1 == nl);
            sgd_momentum(&mut ps[l], &g, &mut ms[l], lr, beta);
            dy = dx;
        }
    }
    (ps, losses)
}
