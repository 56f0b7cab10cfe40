//! One pipeline stage: its weights, its micro-batch buffers and the interpreter of a
//! schedule.

use dist_runtime::prelude::*;

use crate::args::Args;
use crate::model::*;
use crate::schedule::Action;

dist_runtime::group!(pub(crate) Pp);
dist_runtime::group!(pub(crate) Dp);
dist_runtime::group!(pub(crate) Tied);

const ACT: Tag<f64> = Tag::new(10);
const GRAD: Tag<f64> = Tag::new(11);

pub struct Stage {
    pp: Comm<Pp>,
    dp: Comm<Dp>,
    /// The first and the last stage, which both hold the embedding (None elsewhere and
    /// with a single stage).
    tied: Option<Comm<Tied>>,
    pub s: usize,
    pub stages: usize,
    replica: usize,
    replicas: usize,
    micro: usize,
    pub w: Vec<f64>,
    pub emb: Option<Vec<f64>>,
    gw: Vec<f64>,
    ge: Vec<f64>,
    x_in: Vec<Vec<f64>>,
    y_out: Vec<Vec<f64>>,
    dy: Vec<Vec<f64>>,
    dx: Vec<Vec<f64>>,
    step: usize,
    pub loss: f64,
}

impl Stage {
    pub fn new(pp: Comm<Pp>, dp: Comm<Dp>, args: &Args) -> dist_runtime::Result<Stage> {
        let (s, stages) = (pp.rank(), pp.size());
        let tied = if stages > 1 { pp.subgroup::<Tied>(&[0, stages - 1])? } else { None };
        let holds_emb = s == 0 || s + 1 == stages;
        let m = args.micro;
        Ok(Stage {
            s,
            stages,
            replica: dp.rank(),
            replicas: dp.size(),
            micro: m,
            w: init_layer(s),
            emb: holds_emb.then(init_embedding),
            gw: vec![0.0; D * D],
            ge: vec![0.0; V * D],
            x_in: vec![vec![0.0; B * D]; m],
            y_out: vec![vec![0.0; B * D]; m],
            dy: vec![vec![0.0; B * D]; m],
            dx: vec![vec![0.0; B * D]; m],
            step: 0,
            loss: 0.0,
            pp,
            dp,
            tied,
        })
    }

    fn batch_id(&self, mb: usize) -> usize {
        let per_step = self.replicas * self.micro;
        self.step * per_step + self.replica * self.micro + mb
    }

    fn forward(&mut self, mb: usize) {
        if self.s == 0 {
            let (x, _) = tokens(self.batch_id(mb));
            self.x_in[mb] = embed(self.emb.as_ref().expect("first stage holds E"), &x);
        }
        self.y_out[mb] = layer(&self.x_in[mb], &self.w);
    }

    fn backward(&mut self, mb: usize) {
        let (x, t) = tokens(self.batch_id(mb));
        if self.s + 1 == self.stages {
            let scale = (self.replicas * self.micro) as f64;
            let e = self.emb.as_ref().expect("last stage holds E");
            let (l, d) = head(&self.y_out[mb], e, &t, scale, &mut self.ge);
            self.loss += l;
            self.dy[mb] = d;
        }
        let (dx, dw) = layer_back(&self.x_in[mb], &self.y_out[mb], &self.w, &self.dy[mb]);
        self.gw.iter_mut().zip(&dw).for_each(|(g, d)| *g += d);
        if self.s == 0 {
            embed_back(&mut self.ge, &x, &dx);
        } else {
            self.dx[mb] = dx;
        }
    }

    /// Runs one training step as `plan` says.
    pub fn run(&mut self, plan: &[Action]) -> dist_runtime::Result<()> {
        for action in plan {
            match *action {
                Action::RecvAct(mb) => self.pp.recv(self.s - 1, ACT, &mut self.x_in[mb])?,
                Action::Forward(mb) => self.forward(mb),
                Action::SendAct(mb) => self.pp.send(self.s + 1, ACT, &self.y_out[mb])?,
                Action::RecvGrad(mb) => self.pp.recv(self.s + 1, GRAD, &mut self.dy[mb])?,
                Action::Backward(mb) => self.backward(mb),
                Action::SendGrad(mb) => self.pp.send(self.s - 1, GRAD, &self.dx[mb])?,
                Action::SendActRecvGrad { send, recv } => {
                    let next = self.s + 1;
                    let (y, dy) = (&self.y_out[send], &mut self.dy[recv]);
                    self.pp.batch(|b| {
                        b.send(next, ACT, y);
                        b.recv(next, GRAD, dy);
                    })?
                }
                Action::SendGradRecvAct { send, recv } => {
                    let prev = self.s - 1;
                    let (dx, x) = (&self.dx[send], &mut self.x_in[recv]);
                    self.pp.batch(|b| {
                        b.send(prev, GRAD, dx);
                        b.recv(prev, ACT, x);
                    })?
                }
                Action::SyncTied => {
                    if let Some(tied) = &self.tied {
                        tied.all_reduce(&mut self.ge, ReduceOp::Sum)?;
                    }
                }
                Action::SyncReplicas => {
                    self.dp.all_reduce(&mut self.gw, ReduceOp::Sum)?;
                    if self.emb.is_some() {
                        self.dp.all_reduce(&mut self.ge, ReduceOp::Sum)?;
                    }
                }
                Action::Step => {
                    sgd(&mut self.w, &self.gw);
                    if let Some(e) = &mut self.emb {
                        sgd(e, &self.ge);
                    }
                    self.gw.iter_mut().for_each(|g| *g = 0.0);
                    self.ge.iter_mut().for_each(|g| *g = 0.0);
                    self.step += 1;
                }
            }
        }
        Ok(())
    }
}
