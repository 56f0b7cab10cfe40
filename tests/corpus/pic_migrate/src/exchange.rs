//! Moving particles that left this rank's slice to the neighbour they drifted into.

use crate::particles::{pack, unpack, Particle, PACKED};
use dist_runtime::prelude::*;

const COUNT_RIGHTWARD: Tag<u64> = Tag::new(10);
const COUNT_LEFTWARD: Tag<u64> = Tag::new(11);
const PAYLOAD_RIGHTWARD: Tag<f64> = Tag::new(20);
const PAYLOAD_LEFTWARD: Tag<f64> = Tag::new(21);

pub struct Migrator {
    comm: Comm<World>,
    left: usize,
    right: usize,
    /// Particles this rank has handed to a neighbour so far.
    pub sent: usize,
}

impl Migrator {
    pub fn new(comm: Comm<World>) -> Migrator {
        let (r, n) = (comm.rank(), comm.size());
        Migrator { left: (r + n - 1) % n, right: (r + 1) % n, comm, sent: 0 }
    }

    /// Sends `to_left` and `to_right` away and returns the particles that came in from
    /// both neighbours. Counts go first, so each side can size its receive buffers.
    pub fn exchange(&mut self, to_left: &[Particle], to_right: &[Particle]) -> dist_runtime::Result<Vec<Particle>> {
        if self.comm.size() == 1 {
            // The box wraps onto this one rank: nobody to talk to.
            return Ok(to_left.iter().chain(to_right).copied().collect());
        }
        let mut from_left = [0u64];
        let mut from_right = [0u64];
        self.comm.sendrecv(self.right, COUNT_RIGHTWARD, &[to_right.len() as u64], self.left, &mut from_left)?;
        self.comm.sendrecv(self.left, COUNT_LEFTWARD, &[to_left.len() as u64], self.right, &mut from_right)?;

        let out_right = pack(to_right);
        let out_left = pack(to_left);
        let mut in_left = vec![0.0; from_left[0] as usize * PACKED];
        let mut in_right = vec![0.0; from_right[0] as usize * PACKED];
        let reqs = vec![
            self.comm.irecv(self.left, PAYLOAD_RIGHTWARD, &mut in_left)?,
            self.comm.irecv(self.right, PAYLOAD_LEFTWARD, &mut in_right)?,
            self.comm.isend(self.right, PAYLOAD_RIGHTWARD, &out_right)?,
            self.comm.isend(self.left, PAYLOAD_LEFTWARD, &out_left)?,
        ];
        dist_runtime::wait_all(reqs)?;
        self.sent += to_left.len() + to_right.len();

        let mut arrived = unpack(&in_left);
        arrived.extend(unpack(&in_right));
        Ok(arrived)
    }
}
