//! The distributed all-pairs step: every rank owns a contiguous block of bodies, and
//! copies of the blocks travel once around the ring of ranks.

use crate::cli::Config;
use crate::physics::{self, Body, PACKED};
use dist_runtime::prelude::*;

const BLOCK: Tag<f64> = Tag::new(7);

/// Contiguous, nearly equal blocks: the first `total % parts` ranks get one more.
#[derive(Debug, Clone)]
pub struct Layout {
    counts: Vec<usize>,
    offsets: Vec<usize>,
}

impl Layout {
    pub fn block(total: usize, parts: usize) -> Layout {
        let counts: Vec<usize> = (0..parts).map(|r| total / parts + usize::from(r < total % parts)).collect();
        let offsets = counts
            .iter()
            .scan(0, |acc, &c| {
                let start = *acc;
                *acc += c;
                Some(start)
            })
            .collect();
        Layout { counts, offsets }
    }
    pub fn count(&self, r: usize) -> usize {
        self.counts[r]
    }
    pub fn offset(&self, r: usize) -> usize {
        self.offsets[r]
    }
    pub fn widest(&self) -> usize {
        self.counts.iter().copied().max().unwrap_or(0)
    }
    pub fn total(&self) -> usize {
        self.counts.iter().sum()
    }
}

pub struct RingSim {
    comm: Comm<World>,
    layout: Layout,
    local: Vec<Body>,
    eps2: f64,
    dt: f64,
    overlap: bool,
}

impl RingSim {
    pub fn new(comm: Comm<World>, all: &[Body], cfg: &Config) -> RingSim {
        let layout = Layout::block(all.len(), comm.size());
        let start = layout.offset(comm.rank());
        let local = all[start..start + layout.count(comm.rank())].to_vec();
        RingSim { comm, layout, local, eps2: cfg.softening * cfg.softening, dt: cfg.dt, overlap: cfg.overlap }
    }

    pub fn local_len(&self) -> usize {
        self.local.len()
    }

    fn neighbours(&self) -> (usize, usize) {
        let (r, n) = (self.comm.rank(), self.comm.size());
        ((r + 1) % n, (r + n - 1) % n)
    }

    /// This rank's block in wire form, padded with massless slots to the widest block.
    fn pack(&self) -> Vec<f64> {
        let mut buf = vec![0.0; PACKED * self.layout.widest()];
        for (slot, b) in buf.chunks_exact_mut(PACKED).zip(&self.local) {
            slot[..3].copy_from_slice(&b.pos);
            slot[3] = b.mass;
        }
        buf
    }

    /// Passes `out` to the next rank and takes the previous rank's block into `inc`.
    fn shift(&self, out: &[f64], inc: &mut [f64]) -> dist_runtime::Result<()> {
        let (next, prev) = self.neighbours();
        if self.overlap {
            let recv = self.comm.irecv(prev, BLOCK, inc)?;
            let send = self.comm.isend(next, BLOCK, out)?;
            dist_runtime::wait_all([recv, send])
        } else {
            self.comm.sendrecv(next, BLOCK, out, prev, inc)
        }
    }

    fn accumulate(&self, block: &[f64], origin: usize, acc: &mut [[f64; 3]], pot: &mut f64) {
        let me = self.comm.rank();
        let valid = self.layout.count(origin);
        for (i, body) in self.local.iter().enumerate() {
            for (j, src) in block.chunks_exact(PACKED).take(valid).enumerate() {
                if origin == me && i == j {
                    continue;
                }
                let a = physics::accel_from(&body.pos, &src[..3], src[3], self.eps2);
                for k in 0..3 {
                    acc[i][k] += a[k];
                }
                *pot += physics::pair_potential(&body.pos, &src[..3], body.mass, src[3], self.eps2);
            }
        }
    }

    /// Accelerations of the local bodies and their half-share of the potential energy.
    fn forces(&self) -> dist_runtime::Result<(Vec<[f64; 3]>, f64)> {
        let (r, n) = (self.comm.rank(), self.comm.size());
        let mut acc = vec![[0.0; 3]; self.local.len()];
        let mut pot = 0.0;
        let mut travelling = self.pack();
        let mut incoming = vec![0.0; travelling.len()];
        for hop in 0..n {
            let origin = (r + n - hop) % n;
            self.accumulate(&travelling, origin, &mut acc, &mut pot);
            if hop + 1 < n {
                self.shift(&travelling, &mut incoming)?;
                std::mem::swap(&mut travelling, &mut incoming);
            }
        }
        Ok((acc, 0.5 * pot))
    }

    pub fn step(&mut self) -> dist_runtime::Result<()> {
        let (acc, _) = self.forces()?;
        physics::integrate(&mut self.local, &acc, self.dt);
        Ok(())
    }

    /// Total (kinetic + potential) energy, the same on every rank.
    pub fn total_energy(&self) -> dist_runtime::Result<f64> {
        let (_, pot) = self.forces()?;
        let mut parts = [physics::kinetic(&self.local), pot];
        self.comm.all_reduce(&mut parts, ReduceOp::Sum)?;
        Ok(parts[0] + parts[1])
    }

    /// Every body's position, in global order, on `root`; `None` on the other ranks.
    pub fn gather_positions(&self, root: usize) -> dist_runtime::Result<Option<Vec<f64>>> {
        let counts: Vec<usize> = (0..self.comm.size()).map(|r| 3 * self.layout.count(r)).collect();
        let mine: Vec<f64> = self.local.iter().flat_map(|b| b.pos).collect();
        if self.comm.rank() == root {
            let mut all = vec![0.0; 3 * self.layout.total()];
            self.comm.gather_v(&mine, Some(&mut all[..]), &counts, root)?;
            Ok(Some(all))
        } else {
            self.comm.gather_v(&mine, None, &counts, root)?;
            Ok(None)
        }
    }
}
