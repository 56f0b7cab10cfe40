//! The ZeRO-1 trainer: every rank holds the full parameters, but the optimizer state
//! only for its shard of the (padded) flat parameter vector.

use crate::model::{Dataset, Mlp};
use crate::optim::{clip_coef, Adam, Optimizer};
use crate::shard::{padded_len, row_range};
use dist_runtime::prelude::*;

pub struct TrainerBuilder {
    lr: f64,
    steps: usize,
    clip: f64,
    model: Option<Mlp>,
    seed: u64,
}

pub struct Trainer {
    world: Comm<World>,
    model: Mlp,
    steps: usize,
    clip: f64,
    params: Vec<f64>,
    /// Offset and length of this rank's shard in the padded vector.
    shard_lo: usize,
    shard_len: usize,
    opt: Box<dyn Optimizer>,
    pub losses: Vec<f64>,
}

impl Trainer {
    pub fn builder() -> TrainerBuilder {
        TrainerBuilder { lr: 1e-2, steps: 10, clip: 1.0, model: None, seed: 0 }
    }
}

impl TrainerBuilder {
    pub fn lr(mut self, lr: f64) -> Self {
        self.lr = lr;
        self
    }
    pub fn steps(mut self, steps: usize) -> Self {
        self.steps = steps;
        self
    }
    pub fn clip(mut self, clip: f64) -> Self {
        self.clip = clip;
        self
    }
    pub fn model(mut self, model: Mlp) -> Self {
        self.model = Some(model);
        self
    }
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    pub fn build(self, world: Comm<World>) -> Trainer {
        let model = self.model.expect("a model");
        let n = world.size();
        let padded = padded_len(model.num_params(), n);
        let shard_len = padded / n;
        let shard_lo = world.rank() * shard_len;
        let opt: Box<dyn Optimizer> = Box::new(Adam::new(shard_len, self.lr));
        Trainer {
            params: model.init(self.seed),
            world,
            model,
            steps: self.steps,
            clip: self.clip,
            shard_lo,
            shard_len,
            opt,
            losses: Vec::new(),
        }
    }
}

impl Trainer {
    pub fn params(&self) -> &[f64] {
        &self.params
    }

    pub fn world(&self) -> &Comm<World> {
        &self.world
    }

    /// This rank's gradient over its rows, padded to the shardable length.
    fn local_grad(&self, data: &Dataset) -> (f64, Vec<f64>) {
        let (lo, hi) = row_range(data.rows(), self.world.size(), self.world.rank());
        let (x, y) = data.slice(lo, hi);
        let padded = self.shard_len * self.world.size();
        let mut g = vec![0.0; padded];
        let loss = self.model.loss_grad(&self.params, x, y, data.rows(), &mut g[..self.params.len()]);
        (loss, g)
    }

    /// Squared global norm from every rank's shard of the reduced gradient.
    fn global_norm(&self, shard: &[f64]) -> dist_runtime::Result<f64> {
        let mut sq = [shard.iter().map(|g| g * g).sum::<f64>()];
        self.world.all_reduce(&mut sq, ReduceOp::Sum)?;
        Ok(sq[0].sqrt())
    }

    fn step(&mut self, data: &Dataset) -> dist_runtime::Result<f64> {
        let (loss, full) = self.local_grad(data);
        let mut gshard = vec![0.0; self.shard_len];
        self.world.reduce_scatter(&full, &mut gshard, ReduceOp::Sum)?;
        let norm = self.global_norm(&gshard)?;
        let coef = clip_coef(norm, self.clip);
        gshard.iter_mut().for_each(|g| *g *= coef);

        // The optimizer updates only our shard of the padded vector.
        let mut padded = self.params.clone();
        padded.resize(self.shard_len * self.world.size(), 0.0);
        let mine = &mut padded[self.shard_lo..self.shard_lo + self.shard_len];
        self.opt.step(mine, &gshard);
        let updated = mine.to_vec();
        self.world.all_gather(&updated, &mut padded)?;
        padded.truncate(self.model.num_params());
        self.params = padded;

        let mut l = [loss];
        self.world.all_reduce(&mut l, ReduceOp::Sum)?;
        Ok(l[0])
    }

    /// The full-batch loss of the current parameters (every rank's rows).
    pub fn eval_loss(&self, data: &Dataset) -> dist_runtime::Result<f64> {
        let (loss, _) = self.local_grad(data);
        let mut l = [loss];
        self.world.all_reduce(&mut l, ReduceOp::Sum)?;
        Ok(l[0])
    }

    pub fn train(&mut self, data: &Dataset) -> dist_runtime::Result<()> {
        for step in 0..self.steps {
            let loss = self.step(data)?;
            self.losses.push(loss);
            if self.world.rank() == 0 && (step % 10 == 0 || step + 1 == self.steps) {
                println!("step {step:4}  loss {loss:.6}  ({})", self.opt.name());
            }
        }
        Ok(())
    }
}
