//! One pipeline stage: its layer, its schedule, and the transfers to its neighbours.

use dist_runtime::prelude::*;

use crate::layer::{mse, Layer};
use crate::schedule::{Op, Schedule};

const ACT: Tag<f64> = Tag::new(1);
const GRAD: Tag<f64> = Tag::new(2);
const TARGET: Tag<f64> = Tag::new(3);
const SHAPE: Tag<u64> = Tag::new(4);

pub struct Pipeline {
    comm: Comm<World>,
    pub sched: Schedule,
    pub layer: Layer,
    gw: Vec<f64>,
    gb: Vec<f64>,
}

impl Pipeline {
    pub fn new(comm: &Comm<World>, layer: Layer, micro: usize) -> Pipeline {
        let sched = Schedule::gpipe(comm.rank(), comm.size(), micro);
        let (gw, gb) = (vec![0.0; layer.w.len()], vec![0.0; layer.b.len()]);
        Pipeline { comm: comm.clone(), sched, layer, gw, gb }
    }

    /// Neighbouring stages check that they agree on the width of what flows between
    /// them (a wrong partition of the model would otherwise show up as a garbled recv).
    pub fn check_shapes(&self) -> dist_runtime::Result<()> {
        let s = self.sched.stage;
        let (first, last) = (self.sched.is_first(), self.sched.is_last());
        let (mine_in, mine_out) = ([self.layer.d_in as u64], [self.layer.d_out as u64]);
        let (mut prev_out, mut next_in) = ([mine_in[0]], [mine_out[0]]);
        self.comm.batch(|b| {
            if !first {
                b.send(s - 1, SHAPE, &mine_in);
                b.recv(s - 1, SHAPE, &mut prev_out);
            }
            if !last {
                b.send(s + 1, SHAPE, &mine_out);
                b.recv(s + 1, SHAPE, &mut next_in);
            }
        })?;
        if prev_out != mine_in || next_in != mine_out {
            return Err(dist_runtime::Error::Env(format!(
                "stage {s}: takes {} and gives {}, but its neighbours give {} and take {}",
                mine_in[0], mine_out[0], prev_out[0], next_in[0]
            )));
        }
        Ok(())
    }

    /// The loader (stage 0) ships the batch's targets to the last stage, which
    /// computes the loss. Returns the targets on the last stage.
    pub fn targets(&self, loaded: &[f64], len: usize) -> dist_runtime::Result<Option<Vec<f64>>> {
        let (first, last) = (self.sched.is_first(), self.sched.is_last());
        if first && last {
            return Ok(Some(loaded.to_vec()));
        }
        if first {
            self.comm.send(self.sched.stages - 1, TARGET, loaded)?;
        }
        if last {
            let mut t = vec![0.0; len];
            self.comm.recv(0, TARGET, &mut t)?;
            return Ok(Some(t));
        }
        Ok(None)
    }

    /// Runs the schedule over micro-batches of `rows[mb]` samples out of `total`.
    /// `input` is the batch on the first stage, `targets` on the last. Returns the
    /// loss on the last stage (0 elsewhere); the gradients are accumulated.
    pub fn run(&mut self, input: &[f64], targets: Option<&[f64]>, rows: &[usize], total: usize) -> dist_runtime::Result<f64> {
        let m = rows.len();
        let starts: Vec<usize> = rows.iter().scan(0, |acc, &r| Some(std::mem::replace(acc, *acc + r))).collect();
        let (d_in, d_out) = (self.layer.d_in, self.layer.d_out);
        let s = self.sched.stage;
        let mut xs = vec![Vec::new(); m];
        let mut ys = vec![Vec::new(); m];
        let mut dys = vec![Vec::new(); m];
        let mut dxs = vec![Vec::new(); m];
        let mut loss = 0.0;
        self.gw.iter_mut().chain(self.gb.iter_mut()).for_each(|g| *g = 0.0);

        for op in self.sched.ops.clone() {
            match op {
                Op::RecvAct(mb) => {
                    let mut x = vec![0.0; rows[mb] * d_in];
                    self.comm.recv(s - 1, ACT, &mut x)?;
                    xs[mb] = x;
                }
                Op::Forward(mb) => {
                    if self.sched.is_first() {
                        xs[mb] = input[starts[mb] * d_in..(starts[mb] + rows[mb]) * d_in].to_vec();
                    }
                    ys[mb] = self.layer.forward(&xs[mb]);
                }
                Op::SendAct(mb) => self.comm.send(s + 1, ACT, &ys[mb])?,
                Op::Loss(mb) => {
                    let t = targets.expect("the last stage has the targets");
                    let (l, dy) = mse(&ys[mb], &t[starts[mb] * d_out..(starts[mb] + rows[mb]) * d_out], total);
                    loss += l;
                    dys[mb] = dy;
                }
                Op::RecvGrad(mb) => {
                    let mut dy = vec![0.0; rows[mb] * d_out];
                    self.comm.recv(s + 1, GRAD, &mut dy)?;
                    dys[mb] = dy;
                }
                Op::Backward(mb) => {
                    dxs[mb] = self.layer.backward(&xs[mb], &ys[mb], &dys[mb], &mut self.gw, &mut self.gb);
                }
                Op::SendGrad(mb) => self.comm.send(s - 1, GRAD, &dxs[mb])?,
            }
        }
        Ok(loss)
    }

    /// Clips the gradients of the whole model to `max_norm` (the norm summed over
    /// every stage) and takes an SGD step. Returns the global norm.
    pub fn update(&mut self, lr: f64, max_norm: f64) -> dist_runtime::Result<f64> {
        let mut sq = [Layer::grad_sq_norm(&self.gw, &self.gb)];
        self.comm.all_reduce(&mut sq, ReduceOp::Sum)?;
        let norm = sq[0].sqrt();
        let scale = if max_norm > 0.0 && norm > max_norm { max_norm / norm } else { 1.0 };
        let gw: Vec<f64> = self.gw.iter().map(|g| g * scale).collect();
        let gb: Vec<f64> = self.gb.iter().map(|g| g * scale).collect();
        self.layer.sgd(&gw, &gb, lr);
        Ok(norm)
    }

    /// The last stage's loss, on every stage.
    pub fn share_loss(&self, local: f64) -> dist_runtime::Result<f64> {
        let mut buf = [local];
        self.comm.broadcast(&mut buf, self.sched.stages - 1)?;
        Ok(buf[0])
    }
}
