//! Recursive doubling: log2(n) pairwise exchanges, for power-of-two sizes.

use crate::ring::HandCollectives;
use dist_runtime::prelude::*;

const RD: Tag<f64> = Tag::new(30);

impl HandCollectives {
    pub fn rd_all_reduce(&mut self, buf: &mut [f64]) -> dist_runtime::Result<()> {
        let n = self.size;
        assert!(n.is_power_of_two(), "recursive doubling needs a power-of-two size");
        let mut tmp = vec![0.0; buf.len()];
        let mut mask = 1;
        while mask < n {
            let partner = self.rank ^ mask;
            self.world.sendrecv(partner, RD, &*buf, partner, &mut tmp)?;
            // Lower rank's values first, so both partners add in the same order.
            for (b, t) in buf.iter_mut().zip(&tmp) {
                *b = if self.rank < partner { *b + t } else { t + *b };
            }
            self.messages += 1;
            mask <<= 1;
        }
        Ok(())
    }
}
