//! Binomial trees: a reduce to a root with blocking send/recv, and a broadcast with
//! isend/irecv.

use crate::ring::HandCollectives;
use dist_runtime::prelude::*;

const BCAST: Tag<f64> = Tag::new(20);
const REDUCE: Tag<f64> = Tag::new(21);

impl HandCollectives {
    /// Sums every rank's `buf` into `buf` of `root`.
    pub fn tree_reduce(&mut self, buf: &mut [f64], root: usize) -> dist_runtime::Result<()> {
        let n = self.size;
        let vr = (self.rank + n - root) % n;
        let mut tmp = vec![0.0; buf.len()];
        let mut mask = 1;
        while mask < n {
            if vr & mask == 0 {
                let child = vr | mask;
                if child < n {
                    self.world.recv((child + root) % n, REDUCE, &mut tmp)?;
                    buf.iter_mut().zip(&tmp).for_each(|(b, t)| *b += t);
                    self.messages += 1;
                }
            } else {
                self.world.send((vr - mask + root) % n, REDUCE, &*buf)?;
                break;
            }
            mask <<= 1;
        }
        Ok(())
    }

    /// Copies `root`'s `buf` to every rank along a binomial tree.
    pub fn tree_broadcast(&mut self, buf: &mut [f64], root: usize) -> dist_runtime::Result<()> {
        let n = self.size;
        let vr = (self.rank + n - root) % n;
        let mut mask = 1;
        while mask < n {
            if vr & mask != 0 {
                let parent = (vr - mask + root) % n;
                self.world.irecv(parent, BCAST, buf)?.wait()?;
                break;
            }
            mask <<= 1;
        }
        mask >>= 1;
        let mut reqs = Vec::new();
        while mask > 0 {
            if vr + mask < n {
                reqs.push(self.world.isend((vr + mask + root) % n, BCAST, &*buf)?);
            }
            mask >>= 1;
        }
        self.messages += reqs.len();
        dist_runtime::wait_all(reqs)
    }

    pub fn tree_all_reduce(&mut self, buf: &mut [f64]) -> dist_runtime::Result<()> {
        self.tree_reduce(buf, 0)?;
        self.tree_broadcast(buf, 0)
    }
}
