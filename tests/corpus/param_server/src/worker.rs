//! Ranks 1..n: hold a shard of the data, send its gradient, wait for new parameters.

use dist_runtime::prelude::*;

use crate::model::{gradient, shard, Shard};
use crate::protocol::{pack_grad, GRAD, PARAMS, SERVER};
use crate::{protocol_error, Participant, RunConfig};

pub struct Worker {
    comm: Comm<World>,
    data: Shard,
    params: Vec<f64>,
    rounds: usize,
}

impl Worker {
    pub fn new(comm: Comm<World>, cfg: &RunConfig) -> Worker {
        let workers = comm.size() - 1;
        let data = shard(cfg, comm.rank() - 1, workers);
        Worker { comm, data, params: vec![0.0; cfg.n_params()], rounds: cfg.rounds }
    }
}

impl Participant for Worker {
    fn round(&mut self, round: usize) -> dist_runtime::Result<()> {
        let (g, loss) = gradient(&self.params, &self.data);
        self.comm.send(SERVER, GRAD, &pack_grad(&g, loss, self.data.len()))?;
        self.comm.recv(SERVER, PARAMS, &mut self.params)?;
        if self.params.iter().any(|p| !p.is_finite()) {
            return Err(protocol_error(format!("rank {}: parameters diverged in round {}/{}", self.comm.rank(), round + 1, self.rounds)));
        }
        Ok(())
    }

    fn finish(&mut self) -> dist_runtime::Result<(Vec<f64>, f64)> {
        self.comm.broadcast(&mut self.params, SERVER)?;
        let (_, loss) = gradient(&self.params, &self.data);
        let mut buf = [loss];
        self.comm.reduce(&mut buf, ReduceOp::Sum, SERVER)?;
        Ok((self.params.clone(), loss))
    }
}
