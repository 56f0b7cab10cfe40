//! Linear regression: data, the model, its gradient, and a serial local-SGD reference.

use crate::cli::Config;

/// Contiguous block of `total` items for `part` of `parts` (the first ones get the extra).
pub fn shard(total: usize, parts: usize, part: usize) -> std::ops::Range<usize> {
    let base = total / parts;
    let extra = total % parts;
    let start = part * base + part.min(extra);
    start..start + base + usize::from(part < extra)
}

fn hash(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn unit(seed: u64, i: u64) -> f64 {
    (hash(seed ^ hash(i)) >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
}

/// Rows of the data set, features row-major.
pub struct Shard {
    pub x: Vec<f64>,
    pub y: Vec<f64>,
    pub features: usize,
}

impl Shard {
    /// Rows `range` of the synthetic set: y = w*·x + b* + noise.
    pub fn generate(cfg: &Config, range: std::ops::Range<usize>) -> Shard {
        let d = cfg.features;
        let w_true: Vec<f64> = (0..d).map(|j| 1.0 - 0.25 * j as f64).collect();
        let mut x = Vec::with_capacity(range.len() * d);
        let mut y = Vec::with_capacity(range.len());
        for i in range {
            let row: Vec<f64> = (0..d).map(|j| unit(cfg.seed, (i * d + j) as u64)).collect();
            let noise = 0.1 * unit(cfg.seed ^ 0xABCD, i as u64);
            y.push(row.iter().zip(&w_true).map(|(a, b)| a * b).sum::<f64>() + 0.5 + noise);
            x.extend(row);
        }
        Shard { x, y, features: d }
    }

    pub fn len(&self) -> usize {
        self.y.len()
    }

    fn row(&self, i: usize) -> &[f64] {
        &self.x[i * self.features..(i + 1) * self.features]
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Model {
    pub w: Vec<f64>,
    pub b: f64,
}

impl Model {
    pub fn zeros(features: usize) -> Model {
        Model { w: vec![0.0; features], b: 0.0 }
    }

    pub fn predict(&self, row: &[f64]) -> f64 {
        row.iter().zip(&self.w).map(|(a, b)| a * b).sum::<f64>() + self.b
    }

    /// Parameters as one flat vector [w.., b], the layout that is averaged.
    pub fn flat(&self) -> Vec<f64> {
        self.w.iter().copied().chain(std::iter::once(self.b)).collect()
    }

    pub fn load(&mut self, flat: &[f64]) {
        let (w, b) = flat.split_at(self.w.len());
        self.w.copy_from_slice(w);
        self.b = b[0];
    }

    /// Sum of squared errors over the whole shard.
    pub fn sse(&self, data: &Shard) -> f64 {
        (0..data.len()).map(|i| (self.predict(data.row(i)) - data.y[i]).powi(2)).sum()
    }

    /// Gradient of the mean squared error over `batch` rows starting at `start`
    /// (wrapping around the shard), added into `grad` ([dw.., db]).
    pub fn accumulate_grad(&self, data: &Shard, start: usize, batch: usize, grad: &mut [f64]) {
        let d = self.w.len();
        for k in 0..batch {
            let i = (start + k) % data.len();
            let err = self.predict(data.row(i)) - data.y[i];
            let scale = 2.0 * err / batch as f64;
            grad[..d].iter_mut().zip(data.row(i)).for_each(|(g, x)| *g += scale * x);
            grad[d] += scale;
        }
    }
}

/// One local step: `accum` micro-batches, averaged, one SGD update. `cursor` counts the
/// micro-batches this worker has consumed.
pub fn local_step(model: &mut Model, data: &Shard, cursor: &mut usize, cfg: &Config) {
    let mut grad = vec![0.0; model.w.len() + 1];
    if data.len() > 0 {
        for _ in 0..cfg.accum {
            model.accumulate_grad(data, *cursor * cfg.batch, cfg.batch, &mut grad);
            *cursor += 1;
        }
    }
    let mut flat = model.flat();
    flat.iter_mut().zip(&grad).for_each(|(p, g)| *p -= cfg.lr * g / cfg.accum as f64);
    model.load(&flat);
}

pub struct SerialRun {
    pub model: Model,
    pub steps: usize,
    pub losses: Vec<f64>,
}

/// `workers` replicas trained in one process with the same schedule as the ranks.
pub fn serial_local_sgd(cfg: &Config, workers: usize) -> SerialRun {
    let shards: Vec<Shard> = (0..workers).map(|r| Shard::generate(cfg, shard(cfg.rows, workers, r))).collect();
    let mut models = vec![Model::zeros(cfg.features); workers];
    let mut cursors = vec![0usize; workers];
    let mut losses = Vec::new();
    let mut steps = 0;
    while steps < cfg.max_steps {
        for r in 0..workers {
            local_step(&mut models[r], &shards[r], &mut cursors[r], cfg);
        }
        steps += 1;
        if steps % cfg.sync_every == 0 || steps == cfg.max_steps {
            let mut avg = vec![0.0; cfg.features + 1];
            for m in &models {
                avg.iter_mut().zip(m.flat()).for_each(|(a, p)| *a += p);
            }
            avg.iter_mut().for_each(|a| *a /= workers as f64);
            models.iter_mut().for_each(|m| m.load(&avg));
            let sse: f64 = models.iter().zip(&shards).map(|(m, s)| m.sse(s)).sum();
            let loss = sse / cfg.rows as f64;
            losses.push(loss);
            if loss < cfg.target_loss {
                break;
            }
        }
    }
    SerialRun { model: models.swap_remove(0), steps, losses }
}
