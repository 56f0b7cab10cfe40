//! One pipeline stage: its layer's weights, the micro-batches in flight, and the
//! interpreter for the schedule's actions.

use dist_runtime::prelude::*;

use crate::math::{self, B, D};
use crate::p2p::{self, ACT, CKPT, GRAD, LOSS_LOG};
use crate::schedule::{schedule, Action};

pub struct PipelineStage {
    world: Comm<World>,
    stage: usize,
    stages: usize,
    log_every: usize,
    pub w: Vec<f64>,
    grad: Vec<f64>,
    // Per micro-batch: stage input, stage output, dL/d(output), dL/d(input).
    inputs: Vec<Option<Vec<f64>>>,
    outputs: Vec<Option<Vec<f64>>>,
    out_grads: Vec<Option<Vec<f64>>>,
    in_grads: Vec<Option<Vec<f64>>>,
    step_loss: f64,
}

fn take(slot: &mut Option<Vec<f64>>, what: &str, mb: usize) -> Vec<f64> {
    slot.take().unwrap_or_else(|| panic!("schedule bug: {what} of micro-batch {mb} is missing"))
}

impl PipelineStage {
    pub fn new(world: Comm<World>, log_every: usize) -> Self {
        let (stage, stages) = (world.rank(), world.size());
        PipelineStage {
            world,
            stage,
            stages,
            log_every,
            w: math::init_weights(stage),
            grad: vec![0.0; D * D],
            inputs: Vec::new(),
            outputs: Vec::new(),
            out_grads: Vec::new(),
            in_grads: Vec::new(),
            step_loss: 0.0,
        }
    }

    pub fn is_last(&self) -> bool {
        self.stage + 1 == self.stages
    }

    /// One training step over `microbatches` micro-batches; returns the step's loss on
    /// the last stage (0 elsewhere).
    pub fn train_step(&mut self, step: usize, microbatches: usize) -> dist_runtime::Result<f64> {
        for v in [&mut self.inputs, &mut self.outputs, &mut self.out_grads, &mut self.in_grads] {
            *v = vec![None; microbatches];
        }
        self.grad.iter_mut().for_each(|g| *g = 0.0);
        self.step_loss = 0.0;
        for action in schedule(self.stage, self.stages, microbatches) {
            self.run(step, action)?;
        }
        let mut sq = [self.grad.iter().map(|g| g * g).sum::<f64>()];
        self.world.all_reduce(&mut sq, ReduceOp::Sum)?;
        let scale = math::clip_scale(sq[0].sqrt());
        self.w.iter_mut().zip(&self.grad).for_each(|(w, g)| *w -= math::LR * scale * g);
        self.log_loss(step)?;
        Ok(self.step_loss)
    }

    fn run(&mut self, step: usize, action: Action) -> dist_runtime::Result<()> {
        let (world, s) = (&self.world, self.stage);
        match action {
            Action::RecvAct(mb) => {
                let mut x = vec![0.0; B * D];
                p2p::recv_forward(world, s, &mut x)?;
                self.inputs[mb] = Some(x);
            }
            Action::Forward(mb) => {
                let x = if s == 0 { math::micro_batch(step, mb).0 } else { take(&mut self.inputs[mb], "input", mb) };
                let y = math::forward(&x, &self.w);
                if self.is_last() {
                    let (l, dy) = math::loss(&y, &math::micro_batch(step, mb).1);
                    self.step_loss += l;
                    self.out_grads[mb] = Some(dy);
                }
                self.inputs[mb] = Some(x);
                self.outputs[mb] = Some(y);
            }
            Action::SendAct(mb) => p2p::send_forward(world, s, self.outputs[mb].as_deref().expect("output"))?,
            Action::RecvGrad(mb) => {
                let mut dy = vec![0.0; B * D];
                p2p::recv_backward(world, s, &mut dy)?;
                self.out_grads[mb] = Some(dy);
            }
            Action::Backward(mb) => {
                let x = take(&mut self.inputs[mb], "input", mb);
                let y = take(&mut self.outputs[mb], "output", mb);
                let dy = take(&mut self.out_grads[mb], "output gradient", mb);
                let (dx, dw) = math::backward(&x, &y, &self.w, &dy);
                self.grad.iter_mut().zip(dw).for_each(|(g, d)| *g += d);
                self.in_grads[mb] = Some(dx);
            }
            Action::SendGrad(mb) => p2p::send_backward(world, s, &take(&mut self.in_grads[mb], "input gradient", mb))?,
            Action::SendActRecvGrad { send, recv } => {
                let mut dy = vec![0.0; B * D];
                let y = self.outputs[send].as_deref().expect("output");
                p2p::exchange(world, s + 1, (ACT, y), (GRAD, &mut dy))?;
                self.out_grads[recv] = Some(dy);
            }
            Action::SendGradRecvAct { send, recv } => {
                let mut x = vec![0.0; B * D];
                let dx = take(&mut self.in_grads[send], "input gradient", send);
                p2p::exchange(world, s - 1, (GRAD, &dx), (ACT, &mut x))?;
                self.inputs[recv] = Some(x);
            }
        }
        Ok(())
    }

    /// Every `log_every` steps the last stage reports its loss to stage 0, which prints.
    fn log_loss(&self, step: usize) -> dist_runtime::Result<()> {
        let due = step % self.log_every == 0;
        if self.stages == 1 {
            if due {
                println!("step {step:>3}  loss {:.6}", self.step_loss);
            }
        } else if self.is_last() {
            if due {
                self.world.send(0, LOSS_LOG, &[self.step_loss])?;
            }
        } else if self.stage == 0 && due {
            let mut l = [0.0];
            self.world.recv(self.stages - 1, LOSS_LOG, &mut l)?;
            println!("step {step:>3}  loss {:.6}", l[0]);
        }
        Ok(())
    }

    /// The whole model on stage 0 (a checkpoint), `None` elsewhere.
    pub fn gather_checkpoint(&self) -> dist_runtime::Result<Option<Vec<Vec<f64>>>> {
        if self.stage != 0 {
            self.world.send(0, CKPT, &self.w)?;
            return Ok(None);
        }
        let mut model = vec![self.w.clone()];
        for src in 1..self.stages {
            let mut w = vec![0.0; D * D];
            self.world.recv(src, CKPT, &mut w)?;
            model.push(w);
        }
        Ok(Some(model))
    }

    /// Every stage gets the loss curve the last stage recorded.
    pub fn share_losses(&self, losses: &mut [f64]) -> dist_runtime::Result<()> {
        self.world.broadcast(losses, self.stages - 1)
    }
}
