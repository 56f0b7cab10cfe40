//! A hand-written ring all-gather of fixed-size per-rank summaries: n − 1 steps of
//! sendrecv, each passing on the block received in the step before.

use dist_runtime::prelude::*;

const RING: Tag<u64> = Tag::new(7);

pub struct Ring<'a> {
    comm: &'a Comm<World>,
    left: usize,
    right: usize,
}

impl<'a> Ring<'a> {
    pub fn new(comm: &'a Comm<World>) -> Self {
        let (r, n) = (comm.rank(), comm.size());
        Ring { comm, left: (r + n - 1) % n, right: (r + 1) % n }
    }

    /// Every rank's `mine` (all of length `k`), in rank order.
    pub fn all_gather(&self, mine: &[u64]) -> dist_runtime::Result<Vec<u64>> {
        let (r, n, k) = (self.comm.rank(), self.comm.size(), mine.len());
        let mut table = vec![0u64; n * k];
        table[r * k..(r + 1) * k].copy_from_slice(mine);
        for step in 0..n - 1 {
            let send_slot = (r + n - step) % n;
            let recv_slot = (r + n - step - 1) % n;
            let out = table[send_slot * k..(send_slot + 1) * k].to_vec();
            let mut inb = vec![0u64; k];
            self.comm.sendrecv(self.right, RING, &out, self.left, &mut inb)?;
            table[recv_slot * k..(recv_slot + 1) * k].copy_from_slice(&inb);
        }
        Ok(table)
    }
}
