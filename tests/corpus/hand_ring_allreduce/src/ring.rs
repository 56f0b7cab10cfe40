//! The hand-written collectives' state, and the ring all-reduce: a reduce-scatter
//! phase then an all-gather phase over `n` chunks of uneven length.

use crate::config::{Algo, P2pMode};
use dist_runtime::prelude::*;
use std::ops::Range;

const RS: Tag<f64> = Tag::new(10);
const AG: Tag<f64> = Tag::new(11);

/// Chunk k of n of a vector of `len` elements.
pub fn chunk(len: usize, n: usize, k: usize) -> Range<usize> {
    len * k / n..len * (k + 1) / n
}

pub struct HandCollectives {
    pub world: Comm<World>,
    pub rank: usize,
    pub size: usize,
    mode: P2pMode,
    /// Messages exchanged so far, for the report.
    pub messages: usize,
}

impl HandCollectives {
    pub fn new(world: &Comm<World>, mode: P2pMode) -> HandCollectives {
        HandCollectives { world: world.clone(), rank: world.rank(), size: world.size(), mode, messages: 0 }
    }

    fn right(&self) -> usize {
        (self.rank + 1) % self.size
    }

    fn left(&self) -> usize {
        (self.rank + self.size - 1) % self.size
    }

    /// Sends `send` to the right neighbour while receiving `recv` from the left one.
    fn exchange(&mut self, tag: Tag<f64>, send: &[f64], recv: &mut [f64]) -> dist_runtime::Result<()> {
        let (right, left) = (self.right(), self.left());
        self.messages += 1;
        match self.mode {
            P2pMode::SendRecv => self.world.sendrecv(right, tag, send, left, recv),
            P2pMode::Parity if self.rank % 2 == 0 => {
                self.world.send(right, tag, send)?;
                self.world.recv(left, tag, recv)
            }
            P2pMode::Parity => {
                self.world.recv(left, tag, recv)?;
                self.world.send(right, tag, send)
            }
        }
    }

    pub fn ring_all_reduce(&mut self, buf: &mut [f64]) -> dist_runtime::Result<()> {
        let (n, r, len) = (self.size, self.rank, buf.len());
        if n == 1 {
            return Ok(());
        }
        // Reduce-scatter: after step s, chunk (r - s - 1) holds s + 2 ranks' values.
        for s in 0..n - 1 {
            let out = buf[chunk(len, n, (r + n - s) % n)].to_vec();
            let into = chunk(len, n, (r + n - s - 1) % n);
            let mut inc = vec![0.0; into.len()];
            self.exchange(RS, &out, &mut inc)?;
            buf[into].iter_mut().zip(&inc).for_each(|(b, x)| *b += x);
        }
        // All-gather: rank r starts with the full sum of chunk r + 1.
        for s in 0..n - 1 {
            let out = buf[chunk(len, n, (r + 1 + n - s) % n)].to_vec();
            let into = chunk(len, n, (r + n - s) % n);
            let mut inc = vec![0.0; into.len()];
            self.exchange(AG, &out, &mut inc)?;
            buf[into].copy_from_slice(&inc);
        }
        Ok(())
    }

    /// All-reduce (sum) with the chosen algorithm.
    pub fn all_reduce(&mut self, algo: Algo, buf: &mut [f64]) -> dist_runtime::Result<()> {
        match algo {
            Algo::Ring => self.ring_all_reduce(buf),
            Algo::Tree => self.tree_all_reduce(buf),
            Algo::RecDoubling => self.rd_all_reduce(buf),
            Algo::Auto | Algo::All => unreachable!("resolved before use"),
        }
    }
}
