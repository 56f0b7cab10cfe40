//! Runs one rank's schedule: receives block, sends are posted and waited at the end
//! of the step, so a rank only ever waits for data it needs.

use crate::config::Config;
use crate::model::{init_bias, loss, micro_batch, Layer};
use crate::schedule::{Action, Payload, Placement, Schedule};
use dist_runtime::prelude::*;
use std::collections::HashMap;

const ACT: Tag<f64> = Tag::new(1);
const GRAD: Tag<f64> = Tag::new(2);

fn tag(what: Payload) -> Tag<f64> {
    match what {
        Payload::Activation => ACT,
        Payload::Gradient => GRAD,
    }
}

pub struct Stage {
    world: Comm<World>,
    pub place: Placement,
    rank: usize,
    cfg: Config,
    /// This rank's chunks, chunk c being stage `place.stage(rank, c)`.
    pub layers: Vec<Layer>,
    pub bias: Vec<f64>,
    /// Inputs and outputs of each (micro-batch, chunk) until its backward.
    stash: HashMap<(usize, usize), (Vec<f64>, Vec<f64>)>,
    inbox: HashMap<(Payload, usize, usize), Vec<f64>>,
    pub losses: Vec<f64>,
}

impl Stage {
    pub fn new(world: &Comm<World>, cfg: &Config) -> Stage {
        let place = Placement { ranks: world.size(), chunks: cfg.chunks };
        let rank = world.rank();
        let layer = |s: usize| Layer::init(cfg.seed, s, if s == 0 { cfg.in_dim } else { cfg.dim }, cfg.dim);
        let layers = (0..cfg.chunks).map(|c| layer(place.stage(rank, c))).collect();
        let (stash, inbox, losses) = (HashMap::new(), HashMap::new(), Vec::new());
        Stage { world: world.clone(), place, rank, cfg: cfg.clone(), layers, bias: init_bias(cfg.seed, cfg.dim), stash, inbox, losses }
    }

    /// Elements of a message `what` for this rank's `chunk`.
    fn message_len(&self, what: Payload, chunk: usize) -> usize {
        let stage = self.place.stage(self.rank, chunk);
        let width = match what {
            Payload::Activation if stage == 0 => self.cfg.in_dim,
            Payload::Activation | Payload::Gradient => self.cfg.dim,
        };
        self.cfg.batch * width
    }

    /// One training step: the schedule, the tied bias gradient summed over all ranks,
    /// and SGD. Returns this rank's part of the step's loss.
    pub fn train_step(&mut self, sched: &Schedule, step: usize) -> dist_runtime::Result<f64> {
        let comm = self.world.clone();
        let last = self.place.stages() - 1;
        let mut w_grads: Vec<Vec<f64>> = self.layers.iter().map(|l| vec![0.0; l.w.len()]).collect();
        let mut b_grad = vec![0.0; self.cfg.dim];
        let mut step_loss = 0.0;
        let mut produced: Option<Vec<f64>> = None;
        let mut outbox: Vec<Vec<f64>> = vec![Vec::new(); sched.sends()];
        let mut slots = outbox.iter_mut();
        let mut sends = Vec::new();

        for &action in &sched.actions {
            match action {
                Action::Recv { what, mb, chunk, peer } => {
                    let mut buf = vec![0.0; self.message_len(what, chunk)];
                    comm.recv(peer, tag(what), &mut buf)?;
                    self.inbox.insert((what, mb, chunk), buf);
                }
                Action::Forward { mb, chunk } => {
                    let stage = self.place.stage(self.rank, chunk);
                    let x = if stage == 0 {
                        micro_batch(self.cfg.seed, step, mb, self.cfg.batch, self.cfg.in_dim, self.cfg.dim).0
                    } else {
                        self.inbox.remove(&(Payload::Activation, mb, chunk)).expect("activation received")
                    };
                    let y = self.layers[chunk].forward(&x, &self.bias);
                    produced = Some(y.clone());
                    self.stash.insert((mb, chunk), (x, y));
                }
                Action::Backward { mb, chunk } => {
                    let stage = self.place.stage(self.rank, chunk);
                    let (x, y) = self.stash.remove(&(mb, chunk)).expect("forward ran first");
                    let dy = if stage == last {
                        let target = micro_batch(self.cfg.seed, step, mb, self.cfg.batch, self.cfg.in_dim, self.cfg.dim).1;
                        let (l, d) = loss(&y, &target);
                        step_loss += l;
                        d
                    } else {
                        self.inbox.remove(&(Payload::Gradient, mb, chunk)).expect("gradient received")
                    };
                    let (dx, dw, db) = self.layers[chunk].backward(&x, &y, &dy);
                    w_grads[chunk].iter_mut().zip(&dw).for_each(|(g, d)| *g += d);
                    b_grad.iter_mut().zip(&db).for_each(|(g, d)| *g += d);
                    produced = Some(dx);
                }
                Action::Send { what, peer, .. } => {
                    let slot = slots.next().expect("one slot per send");
                    *slot = produced.take().expect("a send follows its compute");
                    let msg: &Vec<f64> = slot;
                    sends.push(comm.isend(peer, tag(what), msg)?);
                }
            }
        }
        dist_runtime::wait_all(sends)?;

        // The bias is shared by every stage: sum its gradient over the ranks.
        comm.all_reduce(&mut b_grad, ReduceOp::Sum)?;
        for (layer, g) in self.layers.iter_mut().zip(&w_grads) {
            layer.sgd(g, self.cfg.lr);
        }
        self.bias.iter_mut().zip(&b_grad).for_each(|(b, g)| *b -= self.cfg.lr * g);
        self.losses.push(step_loss);
        Ok(step_loss)
    }

    /// The loss curve, from the rank that holds the last stage, on every rank.
    pub fn share_losses(&self) -> dist_runtime::Result<Vec<f64>> {
        let loss_root = self.place.rank_of(self.place.stages() - 1);
        let mut curve = self.losses.clone();
        self.world.broadcast(&mut curve, loss_root)?;
        Ok(curve)
    }
}
