//! The training loop, distributed (DDP buckets, gradient accumulation, early stopping on
//! the all-reduced validation loss) and serial (the reference).

use dist_runtime::prelude::*;

use crate::config::Config;
use crate::data::{shard, Dataset, Splits, INPUTS};
use crate::ddp::Ddp;
use crate::model::Mlp;

pub struct Outcome {
    pub params: Vec<f64>,
    pub val_curve: Vec<f64>,
    pub buckets: usize,
}

/// Stops once the validation loss has not improved by `min_delta` (relative) for
/// `patience` epochs in a row.
pub struct EarlyStopping {
    patience: usize,
    min_delta: f64,
    best: f64,
    bad_epochs: usize,
}

impl EarlyStopping {
    pub fn new(patience: usize, min_delta: f64) -> Self {
        EarlyStopping { patience, min_delta, best: f64::INFINITY, bad_epochs: 0 }
    }

    pub fn should_stop(&mut self, val: f64) -> bool {
        if val < self.best * (1.0 - self.min_delta) {
            self.best = val;
            self.bad_epochs = 0;
        } else {
            self.bad_epochs += 1;
        }
        self.bad_epochs >= self.patience
    }
}

pub fn layer_dims(cfg: &Config) -> Vec<usize> {
    vec![INPUTS, cfg.hidden, cfg.hidden, 1]
}

pub struct ValLoss {
    /// This rank's shard only (for the per-rank log line).
    pub local: f64,
    /// Over the whole validation set.
    pub global: f64,
}

pub fn validate(world: &Comm<World>, model: &Mlp, val: &Dataset) -> dist_runtime::Result<ValLoss> {
    let (lo, hi) = shard(val.len(), world.size(), world.rank());
    let (x, y) = val.rows(lo, hi);
    let sse = model.sse(x, y, hi - lo);
    let mut acc = [sse, (hi - lo) as f64];
    world.all_reduce(&mut acc, ReduceOp::Sum)?;
    Ok(ValLoss { local: sse / (hi - lo).max(1) as f64, global: acc[0] / acc[1] })
}

pub fn train_distributed(world: &Comm<World>, cfg: &Config, data: &Splits) -> dist_runtime::Result<Outcome> {
    let (r, n) = (world.rank(), world.size());
    let mut model = Mlp::new(&layer_dims(cfg), cfg.seed + 1);
    // This rank's rows of every global micro-batch.
    let (lo, hi) = shard(cfg.batch, n, r);
    // Buckets carry plain sums; the optimizer divides by the global batch.
    let mut ddp = Ddp::new(world.clone(), &model.shapes(), cfg.bucket_kb, ReduceOp::Sum);
    let scale = cfg.lr / (cfg.batch * cfg.accum) as f64;
    let mut stopper = EarlyStopping::new(cfg.patience, cfg.min_delta);
    let mut val_curve = Vec::new();
    for epoch in 0..cfg.max_epochs {
        for step in 0..cfg.steps_per_epoch {
            let mut grads = model.zero_grads();
            for micro in 0..cfg.accum {
                let base = (step * cfg.accum + micro) * cfg.batch;
                let (x, y) = data.train.rows(base + lo, base + hi);
                let tape = model.forward(x, hi - lo);
                let (_, dy) = model.output_grad(&tape, y);
                if micro + 1 < cfg.accum {
                    // no_sync(): accumulate locally, reduce only on the last micro-step
                    model.backward(&tape, dy, &mut grads);
                } else {
                    ddp.backward_sync(&model, &tape, dy, &mut grads)?;
                }
            }
            model.sgd(&grads, scale);
        }
        let val = validate(world, &model, &data.val)?;
        if std::env::var_os("DDP_VERBOSE").is_some() {
            println!("epoch {epoch}: val {:.6} (local {:.6})", val.global, val.local);
        }
        val_curve.push(val.global);
        if stopper.should_stop(val.global) {
            break;
        }
    }
    Ok(Outcome { params: model.flat(), val_curve, buckets: ddp.num_buckets() })
}

/// The same training in one process on whole micro-batches.
pub fn train_serial(cfg: &Config, data: &Splits) -> Outcome {
    let mut model = Mlp::new(&layer_dims(cfg), cfg.seed + 1);
    let scale = cfg.lr / (cfg.batch * cfg.accum) as f64;
    let mut stopper = EarlyStopping::new(cfg.patience, cfg.min_delta);
    let mut val_curve = Vec::new();
    for _ in 0..cfg.max_epochs {
        for step in 0..cfg.steps_per_epoch {
            let mut grads = model.zero_grads();
            for micro in 0..cfg.accum {
                let base = (step * cfg.accum + micro) * cfg.batch;
                let (x, y) = data.train.rows(base, base + cfg.batch);
                let tape = model.forward(x, cfg.batch);
                let (_, dy) = model.output_grad(&tape, y);
                model.backward(&tape, dy, &mut grads);
            }
            model.sgd(&grads, scale);
        }
        let (x, y) = data.val.rows(0, data.val.len());
        let val = model.sse(x, y, data.val.len()) / data.val.len() as f64;
        val_curve.push(val);
        if stopper.should_stop(val) {
            break;
        }
    }
    Outcome { params: model.flat(), val_curve, buckets: 0 }
}
