//! Ghost exchange for a block-row distributed sparse matrix: which entries of x this
//! rank needs from whom (and sends to whom), computed from the matrix structure.

use crate::matrix::{Partition, Row};
use dist_runtime::prelude::*;
use std::collections::BTreeMap;

/// Ghost values travelling to a lower / a higher rank.
pub const TO_LOWER: Tag<f64> = Tag::new(11);
pub const TO_HIGHER: Tag<f64> = Tag::new(12);
const PLAN: Tag<u64> = Tag::new(13);

fn send_tag(me: usize, peer: usize) -> Tag<f64> {
    if peer < me {
        TO_LOWER
    } else {
        TO_HIGHER
    }
}

fn recv_tag(me: usize, peer: usize) -> Tag<f64> {
    if peer < me {
        TO_HIGHER
    } else {
        TO_LOWER
    }
}

#[derive(Debug)]
pub struct Neighbour {
    pub rank: usize,
    /// Global columns this rank receives from `rank`, increasing.
    pub recv_cols: Vec<usize>,
    /// Local rows whose x this rank sends to `rank`, increasing.
    pub send_rows: Vec<usize>,
}

#[derive(Debug)]
pub struct HaloPlan {
    me: usize,
    pub neighbours: Vec<Neighbour>,
    slot: BTreeMap<usize, usize>,
}

impl HaloPlan {
    /// The matrix is structurally symmetric: if my row i has a column j that rank q
    /// owns, q's row j has column i, so q needs my x[i].
    pub fn build(me: usize, part: &Partition, rows: &[Row]) -> HaloPlan {
        let mut recv: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        let mut send: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (li, row) in rows.iter().enumerate() {
            for &j in &row.cols {
                let q = part.owner(j);
                if q != me {
                    recv.entry(q).or_default().push(j);
                    send.entry(q).or_default().push(li);
                }
            }
        }
        for list in recv.values_mut() {
            list.sort_unstable();
            list.dedup();
        }
        for list in send.values_mut() {
            list.sort_unstable();
            list.dedup();
        }
        let neighbours: Vec<Neighbour> = recv
            .into_iter()
            .map(|(rank, recv_cols)| Neighbour { rank, recv_cols, send_rows: send.remove(&rank).unwrap_or_default() })
            .collect();
        let slot = neighbours.iter().flat_map(|nb| nb.recv_cols.iter().copied()).enumerate().map(|(s, j)| (j, s)).collect();
        HaloPlan { me, neighbours, slot }
    }

    pub fn ghost_count(&self) -> usize {
        self.slot.len()
    }

    pub fn slot(&self, col: usize) -> Option<usize> {
        self.slot.get(&col).copied()
    }

    /// Checks with every neighbour that what it expects from me is what I will send.
    pub fn verify(&self, comm: &Comm<World>) -> Result<(), String> {
        for nb in &self.neighbours {
            let mine = [nb.recv_cols.len() as u64];
            let mut theirs = [0u64];
            comm.sendrecv(nb.rank, PLAN, &mine, nb.rank, &mut theirs).map_err(|e| e.to_string())?;
            if theirs[0] as usize != nb.send_rows.len() {
                return Err(format!(
                    "rank {} expects {} entries from rank {}, which plans to send {}",
                    nb.rank,
                    theirs[0],
                    self.me,
                    nb.send_rows.len()
                ));
            }
        }
        Ok(())
    }

    /// Receives every ghost entry into `ghosts` (slot order), sending my entries of `x`
    /// to the neighbours that need them.
    pub fn exchange(&self, comm: &Comm<World>, x: &[f64], ghosts: &mut [f64]) -> dist_runtime::Result<()> {
        let packed: Vec<Vec<f64>> =
            self.neighbours.iter().map(|nb| nb.send_rows.iter().map(|&li| x[li]).collect()).collect();
        let mut bufs: Vec<Vec<f64>> = self.neighbours.iter().map(|nb| vec![0.0; nb.recv_cols.len()]).collect();
        let mut reqs = Vec::with_capacity(2 * self.neighbours.len());
        for (nb, buf) in self.neighbours.iter().zip(bufs.iter_mut()) {
            reqs.push(comm.irecv(nb.rank, recv_tag(self.me, nb.rank), buf)?);
        }
        for (nb, out) in self.neighbours.iter().zip(&packed) {
            reqs.push(comm.isend(nb.rank, send_tag(self.me, nb.rank), out)?);
        }
        dist_runtime::wait_all(reqs)?;
        for (nb, buf) in self.neighbours.iter().zip(&bufs) {
            for (&j, &v) in nb.recv_cols.iter().zip(buf) {
                ghosts[self.slot[&j]] = v;
            }
        }
        Ok(())
    }
}
