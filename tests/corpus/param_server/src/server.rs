//! Rank 0: owns the parameters and applies each round's summed gradient.

use dist_runtime::prelude::*;

use crate::model::{apply, gradient, shard, Shard};
use crate::protocol::{grad_msg_len, pack_grad, unpack_grad, GRAD, PARAMS, SERVER};
use crate::{protocol_error, Participant, RunConfig};

pub struct Server {
    comm: Comm<World>,
    cfg: RunConfig,
    params: Vec<f64>,
    /// Data the server trains on itself: only when it has no workers.
    local: Option<Shard>,
    /// Mean loss of each round, as reported by the workers.
    pub losses: Vec<f64>,
    /// The order in which the workers' gradients arrived, per round.
    pub arrivals: Vec<Vec<usize>>,
}

impl Server {
    pub fn new(comm: Comm<World>, cfg: &RunConfig) -> Server {
        let local = (comm.size() == 1).then(|| shard(cfg, 0, 1));
        let params = vec![0.0; cfg.n_params()];
        Server { comm, cfg: cfg.clone(), params, local, losses: Vec::new(), arrivals: Vec::new() }
    }

    /// Take one gradient from every worker, in arrival order.
    fn collect(&mut self) -> dist_runtime::Result<(Vec<Option<Vec<f64>>>, Vec<usize>)> {
        let workers = self.comm.size() - 1;
        let len = grad_msg_len(self.cfg.n_params());
        let mut slots = vec![None; self.comm.size()];
        let mut order = Vec::with_capacity(workers);
        for _ in 0..workers {
            let mut msg = vec![0.0; len];
            let st = self.comm.recv_any(GRAD, &mut msg)?;
            if st.count != len || slots[st.source].is_some() {
                return Err(protocol_error(format!("unexpected gradient message from rank {} ({} values)", st.source, st.count)));
            }
            slots[st.source] = Some(msg);
            order.push(st.source);
        }
        Ok((slots, order))
    }
}

impl Participant for Server {
    fn round(&mut self, round: usize) -> dist_runtime::Result<()> {
        let (mut slots, order) = self.collect()?;
        if let Some(data) = &self.local {
            let (g, loss) = gradient(&self.params, data);
            slots[SERVER] = Some(pack_grad(&g, loss, data.len()));
        }
        // Sum in rank order, not arrival order, so every run gives the same bits.
        let mut total = vec![0.0; self.cfg.n_params()];
        let (mut loss, mut rows) = (0.0, 0);
        for msg in slots.iter().flatten() {
            let (g, l, n) = unpack_grad(msg);
            total.iter_mut().zip(g).for_each(|(t, gi)| *t += gi);
            loss += l;
            rows += n;
        }
        if rows != self.cfg.samples {
            return Err(protocol_error(format!("round {round}: gradients cover {rows} rows of {}", self.cfg.samples)));
        }
        apply(&mut self.params, &total, self.cfg.lr, self.cfg.samples);
        for &worker in &order {
            self.comm.send(worker, PARAMS, &self.params)?;
        }
        self.losses.push(loss / self.cfg.samples as f64);
        self.arrivals.push(order);
        Ok(())
    }

    fn finish(&mut self) -> dist_runtime::Result<(Vec<f64>, f64)> {
        self.comm.broadcast(&mut self.params, SERVER)?;
        let own = self.local.as_ref().map_or(0.0, |d| gradient(&self.params, d).1);
        let mut loss = [own];
        self.comm.reduce(&mut loss, ReduceOp::Sum, SERVER)?;
        Ok((self.params.clone(), loss[0]))
    }
}
