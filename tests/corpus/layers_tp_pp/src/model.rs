//! The part of the model one pipeline stage holds, and one training step through the
//! pipeline (activations forward to the next stage, gradients back).

use crate::data;
use crate::layers::{ColumnParallelLinear, Layer, RowParallelLinear, Tanh};
use crate::parallel::ParallelState;
use crate::serial::Weights;
use dist_runtime::prelude::*;

const ACT: Tag<f32> = Tag::new(10);
const GRAD: Tag<f32> = Tag::new(11);

pub struct StageModel {
    layers: Vec<Box<dyn Layer>>,
}

impl StageModel {
    /// The blocks of this pipeline stage, sharded over tp.
    pub fn new(ps: &ParallelState) -> StageModel {
        let per_stage = data::BLOCKS / ps.num_stages();
        let first = ps.stage() * per_stage;
        let (tp, t) = (ps.tp.size(), ps.tp.rank());
        let mut layers: Vec<Box<dyn Layer>> = Vec::new();
        for block in first..first + per_stage {
            let (w1, w2) = data::block_weights(block);
            layers.push(Box::new(ColumnParallelLinear::from_full(block, &w1, data::D, data::F, tp, t)));
            layers.push(Box::new(Tanh::default()));
            layers.push(Box::new(RowParallelLinear::from_full(block, &w2, data::F, data::D, tp, t)));
        }
        StageModel { layers }
    }

    /// Forward and backward of one batch; returns the loss on the last stage, 0 elsewhere.
    pub fn train_step(&mut self, ps: &ParallelState, step: usize) -> Result<f32, dist_runtime::Error> {
        let stage = ps.stage();
        let (x, target) = data::batch(step, ps.dp.rank());
        let mut h = vec![0.0f32; data::BATCH * data::D];
        if ps.is_first_stage() {
            h = x;
        } else {
            ps.pp.recv(stage - 1, ACT, &mut h)?;
        }
        for layer in self.layers.iter_mut() {
            h = layer.forward(&h, ps)?;
        }
        let mut loss = 0.0;
        let mut dy = vec![0.0f32; data::BATCH * data::D];
        if ps.is_last_stage() {
            loss = data::loss(&h, &target);
            dy = data::loss_grad(&h, &target);
        } else {
            ps.pp.send(stage + 1, ACT, &h)?;
            ps.pp.recv(stage + 1, GRAD, &mut dy)?;
        }
        for layer in self.layers.iter_mut().rev() {
            dy = layer.backward(&dy, ps)?;
        }
        if !ps.is_first_stage() {
            ps.pp.send(stage - 1, GRAD, &dy)?;
        }
        Ok(loss)
    }

    /// Averages every gradient over the data-parallel replicas.
    pub fn sync_grads(&mut self, ps: &ParallelState) -> Result<(), dist_runtime::Error> {
        for layer in self.layers.iter_mut() {
            if let Some(g) = layer.grad_mut() {
                ps.dp.all_reduce(g, ReduceOp::Avg)?;
            }
        }
        Ok(())
    }

    pub fn sgd(&mut self, lr: f32) {
        for layer in self.layers.iter_mut() {
            layer.sgd(lr);
        }
    }

    /// (largest difference, name of the worst layer) against the serial weights.
    pub fn compare(&self, reference: &Weights) -> (f32, String) {
        let mut worst = (0.0f32, String::from("none"));
        for layer in &self.layers {
            let d = layer.compare(reference);
            if d > worst.0 {
                worst = (d, layer.name());
            }
        }
        worst
    }
}
