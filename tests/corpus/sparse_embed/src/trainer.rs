//! One rank's training loop over its shard of the table.

use crate::cli::Config;
use crate::data;
use crate::exchange::Exchanger;
use crate::optim::Optimizer;
use crate::shard::Shard;
use dist_runtime::prelude::*;

pub struct Trainer<O: Optimizer> {
    ex: Exchanger,
    pub shard: Shard<O>,
    cfg: Config,
    rank: usize,
    n: usize,
    /// Distinct ids this rank asked of other ranks, over the whole run.
    pub remote_lookups: usize,
}

impl<O: Optimizer> Trainer<O> {
    pub fn new(world: &Comm<World>, cfg: &Config, opt: O) -> Trainer<O> {
        let (rank, n) = (world.rank(), world.size());
        Trainer {
            ex: Exchanger::new(world, cfg.mode),
            shard: Shard::new(rank, n, cfg.rows, cfg.dim, cfg.seed, opt),
            cfg: cfg.clone(),
            rank,
            n,
            remote_lookups: 0,
        }
    }

    /// One step: route the batch's ids to their owners, fetch the rows, compute the
    /// loss and gradients here, send the gradients back, apply those that came here.
    /// Returns the loss summed over every rank.
    pub fn step(&mut self, step: usize) -> dist_runtime::Result<f64> {
        let dim = self.cfg.dim;
        let batch = data::batch(self.cfg.seed, self.rank, step, self.cfg.batch, self.cfg.rows);
        let outbox = data::outbox(&batch, self.n);
        self.remote_lookups += outbox.iter().filter(|(owner, _)| **owner != self.rank).map(|(_, ids)| ids.len()).sum::<usize>();

        let routing = self.ex.route(&outbox)?;
        let answer = self.shard.gather_rows(&routing.incoming);
        let rows = self.ex.fetch_rows(&routing, &answer, dim)?;

        let scale = 1.0 / (self.cfg.batch * self.n) as f32;
        let (loss, grads) = data::loss_and_grads(&batch, &routing.asked, &rows, dim, scale);
        let mine = self.ex.push_grads(&routing, &grads, dim)?;
        self.shard.apply(&routing.incoming, &mine);
        self.ex.total_loss(loss)
    }
}
