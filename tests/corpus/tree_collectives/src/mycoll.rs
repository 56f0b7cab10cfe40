//! Collectives written by hand on top of point-to-point messages, the way they are in
//! MPICH: a binomial-tree broadcast, a recursive-doubling all-reduce (with the usual
//! fold-in for sizes that are not a power of two) and a ring all-gather.

use dist_runtime::prelude::*;

const BCAST: Tag<f64> = Tag::new(40);
const BUTTERFLY: Tag<f64> = Tag::new(41);
const FOLD: Tag<f64> = Tag::new(42);
const UNFOLD: Tag<f64> = Tag::new(43);
const RING: Tag<f64> = Tag::new(44);

pub struct MyColl<G: Group> {
    comm: Comm<G>,
}

/// The largest power of two ≤ n (n ≥ 1).
fn pow2_floor(n: usize) -> usize {
    1 << (usize::BITS - 1 - n.leading_zeros())
}

impl<G: Group> MyColl<G> {
    pub fn new(comm: Comm<G>) -> Self {
        MyColl { comm }
    }

    /// Binomial-tree broadcast from `root`. In relative numbering (root = 0) a rank
    /// receives from the rank that differs in its lowest set bit, then forwards to the
    /// ranks below that bit.
    pub fn broadcast(&self, buf: &mut [f64], root: usize) -> dist_runtime::Result<()> {
        let (r, n) = (self.comm.rank(), self.comm.size());
        let vrank = (r + n - root) % n;
        let mut mask = 1;
        while mask < n {
            if vrank & mask != 0 {
                let parent = (vrank - mask + root) % n;
                self.comm.recv(parent, BCAST, buf)?;
                break;
            }
            mask <<= 1;
        }
        mask >>= 1;
        while mask > 0 {
            if vrank + mask < n {
                let child = (vrank + mask + root) % n;
                self.comm.send(child, BCAST, buf)?;
            }
            mask >>= 1;
        }
        Ok(())
    }

    /// Sum all-reduce by recursive doubling. With n = p2 + extra (p2 a power of two), the
    /// ranks p2.. first fold their data into rank r − p2, wait out the butterfly among
    /// the first p2 ranks, and get the result back from the same partner.
    pub fn all_reduce_sum(&self, buf: &mut [f64]) -> dist_runtime::Result<()> {
        let (r, n) = (self.comm.rank(), self.comm.size());
        let p2 = pow2_floor(n);
        let extra = n - p2;
        if r >= p2 {
            self.comm.send(r - p2, FOLD, buf)?;
            return self.comm.recv(r - p2, UNFOLD, buf);
        }
        let mut other = vec![0.0; buf.len()];
        if r < extra {
            self.comm.recv(r + p2, FOLD, &mut other)?;
            buf.iter_mut().zip(&other).for_each(|(x, y)| *x += y);
        }
        let mut mask = 1;
        while mask < p2 {
            let partner = r ^ mask;
            self.comm.sendrecv(partner, BUTTERFLY, &*buf, partner, &mut other)?;
            // the lower rank's data first, so both partners hold bitwise the same sum
            for (x, y) in buf.iter_mut().zip(&other) {
                *x = if partner < r { y + *x } else { *x + y };
            }
            mask <<= 1;
        }
        if r < extra {
            self.comm.send(r + p2, UNFOLD, buf)?;
        }
        Ok(())
    }

    /// Ring all-gather: `out` is n blocks of `mine.len()`; in step s every rank passes
    /// the block it got in step s − 1 to its right neighbour.
    pub fn all_gather(&self, mine: &[f64], out: &mut [f64]) -> dist_runtime::Result<()> {
        let (r, n, len) = (self.comm.rank(), self.comm.size(), mine.len());
        assert_eq!(out.len(), n * len, "all_gather: out must hold one block per rank");
        out[r * len..(r + 1) * len].copy_from_slice(mine);
        let (right, left) = ((r + 1) % n, (r + n - 1) % n);
        let mut incoming = vec![0.0; len];
        for step in 0..n.saturating_sub(1) {
            let send_block = (r + n - step) % n;
            let recv_block = (r + 2 * n - step - 1) % n;
            let outgoing = &out[send_block * len..(send_block + 1) * len];
            self.comm.sendrecv(right, RING, outgoing, left, &mut incoming)?;
            out[recv_block * len..(recv_block + 1) * len].copy_from_slice(&incoming);
        }
        Ok(())
    }
}
