//! The training step: GPipe or 1F1B over micro-batches, then the gradient all_reduce.

use crate::config::{Config, Schedule};
use crate::data::micro_batch;
use crate::model::{loss, Stage};
use crate::p2p::*;
use crate::topology::Topology;
use dist_runtime::prelude::*;

/// Runs one pipeline step. Returns this rank's summed loss (non-zero on last stages only).
pub struct Trainer<'a> {
    pub topo: &'a Topology,
    pub cfg: &'a Config,
    pub stage: Stage,
    step: usize,
    loss: f64,
}

impl<'a> Trainer<'a> {
    pub fn new(topo: &'a Topology, cfg: &'a Config, stage: Stage) -> Self {
        Trainer { topo, cfg, stage, step: 0, loss: 0.0 }
    }

    fn input(&self, mb: usize) -> Vec<f64> {
        micro_batch(self.step, self.topo.replica(), mb, self.cfg.rows, self.cfg.width).0
    }

    fn loss_grad(&mut self, mb: usize, y: &[f64]) -> Vec<f64> {
        let t = micro_batch(self.step, self.topo.replica(), mb, self.cfg.rows, self.cfg.width).1;
        let (l, d) = loss(y, &t);
        self.loss += l;
        d
    }

    /// Forward of one micro-batch on this stage, receiving its input if not first.
    fn fwd(&mut self, mb: usize, x: Option<Vec<f64>>) -> dist_runtime::Result<Vec<f64>> {
        let x = match x {
            Some(x) => x,
            None if self.topo.is_first() => self.input(mb),
            None => recv_forward(self.topo, self.stage.act_len())?,
        };
        Ok(self.stage.forward(mb, x))
    }

    fn gpipe(&mut self) -> dist_runtime::Result<()> {
        let m = self.cfg.micro;
        let mut outs = Vec::with_capacity(m);
        for mb in 0..m {
            let y = self.fwd(mb, None)?;
            if !self.topo.is_last() {
                send_forward(self.topo, &y)?;
            }
            outs.push(y);
        }
        for mb in (0..m).rev() {
            let dy = if self.topo.is_last() {
                self.loss_grad(mb, &outs[mb])
            } else {
                recv_backward(self.topo, self.stage.act_len())?
            };
            let dx = self.stage.backward(mb, dy);
            if !self.topo.is_first() {
                send_backward(self.topo, &dx)?;
            }
        }
        Ok(())
    }

    fn one_f_one_b(&mut self) -> dist_runtime::Result<()> {
        let m = self.cfg.micro;
        let (s, p) = (self.topo.stage(), self.topo.stages());
        let warmup = (p - s - 1).min(m);
        let steady = m - warmup;
        let (first, last) = (self.topo.is_first(), self.topo.is_last());
        for mb in 0..warmup {
            let y = self.fwd(mb, None)?;
            send_forward(self.topo, &y)?;
        }
        let mut next_in = None;
        if steady > 0 && !first {
            next_in = Some(recv_forward(self.topo, self.stage.act_len())?);
        }
        for i in 0..steady {
            let (fmb, bmb) = (warmup + i, i);
            let y = self.fwd(fmb, next_in.take())?;
            let dy = if last { self.loss_grad(fmb, &y) } else { send_forward_recv_backward(self.topo, &y)? };
            let dx = self.stage.backward(bmb, dy);
            if first {
                continue;
            }
            if i + 1 == steady {
                send_backward(self.topo, &dx)?;
            } else {
                next_in = Some(send_backward_recv_forward(self.topo, &dx)?);
            }
        }
        for bmb in steady..m {
            let dy = recv_backward(self.topo, self.stage.act_len())?;
            let dx = self.stage.backward(bmb, dy);
            if !first {
                send_backward(self.topo, &dx)?;
            }
        }
        Ok(())
    }

    /// Sums the stage's gradients over the data-parallel replicas.
    fn all_reduce_grads(&mut self) -> dist_runtime::Result<()> {
        if self.cfg.per_layer_allreduce {
            for g in self.stage.grads.iter_mut() {
                self.topo.dp.all_reduce(g, ReduceOp::Sum)?;
            }
        } else {
            let mut flat: Vec<f64> = self.stage.grads.concat();
            self.topo.dp.all_reduce(&mut flat, ReduceOp::Sum)?;
            for (g, chunk) in self.stage.grads.iter_mut().zip(flat.chunks(self.cfg.width * self.cfg.width)) {
                g.copy_from_slice(chunk);
            }
        }
        Ok(())
    }

    /// One optimiser step; returns the loss summed over every replica.
    pub fn train_step(&mut self) -> dist_runtime::Result<f64> {
        self.loss = 0.0;
        match self.cfg.schedule {
            Schedule::GPipe => self.gpipe()?,
            Schedule::OneFOneB => self.one_f_one_b()?,
        }
        self.all_reduce_grads()?;
        self.stage.step(self.cfg.lr);
        let mut total = [self.loss];
        self.topo.world.all_reduce(&mut total, ReduceOp::Sum)?;
        self.step += 1;
        Ok(total[0])
    }
}
