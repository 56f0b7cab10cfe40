//! Non-blocking exchange of the ghost rows with the ranks above and below.

use crate::decomp::Block;
use dist_runtime::prelude::*;

/// A row travelling down (sent by the rank above, received by the rank below).
const GOING_DOWN: Tag<f64> = Tag::new(1);
/// A row travelling up.
const GOING_UP: Tag<f64> = Tag::new(2);

/// Owns the requests of one exchange between `begin` (posts them) and `end` (waits for
/// all of them); the caller updates the rows that need no ghost in between.
pub struct HaloExchange<'a> {
    comm: &'a Comm<World>,
    up: Option<usize>,
    down: Option<usize>,
    pending: Vec<Request<'a>>,
}

impl<'a> HaloExchange<'a> {
    pub fn new(comm: &'a Comm<World>, block: &Block) -> HaloExchange<'a> {
        HaloExchange { comm, up: block.up, down: block.down, pending: Vec::with_capacity(4) }
    }

    /// Posts the receives into the ghost rows and the sends of the first and last owned
    /// rows, for each neighbour that exists.
    pub fn begin(
        &mut self,
        owned: &'a [f64],
        cols: usize,
        ghost_above: &'a mut [f64],
        ghost_below: &'a mut [f64],
    ) -> dist_runtime::Result<()> {
        debug_assert!(self.pending.is_empty(), "begin called twice without end");
        let first_row = &owned[..cols];
        let last_row = &owned[owned.len() - cols..];
        if let Some(up) = self.up {
            self.pending.push(self.comm.irecv(up, GOING_DOWN, ghost_above)?);
            self.pending.push(self.comm.isend(up, GOING_UP, first_row)?);
        }
        if let Some(down) = self.down {
            self.pending.push(self.comm.irecv(down, GOING_UP, ghost_below)?);
            self.pending.push(self.comm.isend(down, GOING_DOWN, last_row)?);
        }
        Ok(())
    }

    /// How many requests are still outstanding.
    pub fn in_flight(&self) -> usize {
        self.pending.len()
    }

    /// Waits for every request posted by `begin`.
    pub fn end(&mut self) -> dist_runtime::Result<()> {
        dist_runtime::wait_all(self.pending.drain(..))
    }
}
