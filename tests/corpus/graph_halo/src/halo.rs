//! The halo: for every neighbouring rank, which of our values it needs and which of its
//! values we need, exchanged with isend/irecv each sweep.

use crate::graph::{Graph, Partition};
use dist_runtime::prelude::*;
use std::collections::{BTreeMap, BTreeSet};

/// Values travel "up" to higher ranks and "down" to lower ones under their own tags.
const UP: Tag<f64> = Tag::new(21);
const DOWN: Tag<f64> = Tag::new(22);

fn send_tag(me: usize, peer: usize) -> Tag<f64> {
    if peer > me { UP } else { DOWN }
}

fn recv_tag(me: usize, peer: usize) -> Tag<f64> {
    if peer < me { UP } else { DOWN }
}

pub struct Neighbour {
    pub rank: usize,
    /// Local indices of our vertices it needs, by increasing global id.
    pub send_idx: Vec<usize>,
    /// Global ids of its vertices we need, increasing.
    pub recv_gids: Vec<usize>,
}

pub struct Halo {
    comm: Comm<World>,
    pub nbrs: Vec<Neighbour>,
    /// Ghost values by global id.
    pub ghost: BTreeMap<usize, f64>,
    pub messages: usize,
}

impl Halo {
    pub fn build(comm: &Comm<World>, g: &Graph, part: &Partition) -> Halo {
        let me = comm.rank();
        let mine = part.range(me);
        let mut sends: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
        let mut recvs: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
        for u in mine.clone() {
            for &v in g.adj[u].iter().filter(|v| !mine.contains(v)) {
                let q = part.owner(v);
                sends.entry(q).or_default().insert(u - mine.start);
                recvs.entry(q).or_default().insert(v);
            }
        }
        let nbrs: Vec<Neighbour> = recvs
            .into_iter()
            .map(|(q, gids)| Neighbour {
                rank: q,
                send_idx: sends.remove(&q).unwrap_or_default().into_iter().collect(),
                recv_gids: gids.into_iter().collect(),
            })
            .collect();
        let ghost = nbrs.iter().flat_map(|nb| nb.recv_gids.iter().map(|&v| (v, 0.0))).collect();
        Halo { comm: comm.clone(), nbrs, ghost, messages: 0 }
    }

    /// Sends our boundary values from `x` and refreshes the ghosts.
    pub fn exchange(&mut self, x: &[f64]) -> dist_runtime::Result<()> {
        let me = self.comm.rank();
        let outgoing: Vec<Vec<f64>> = self.nbrs.iter().map(|nb| nb.send_idx.iter().map(|&l| x[l]).collect()).collect();
        let mut incoming: Vec<Vec<f64>> = self.nbrs.iter().map(|nb| vec![0.0; nb.recv_gids.len()]).collect();
        let mut reqs = Vec::with_capacity(2 * self.nbrs.len());
        for (nb, buf) in self.nbrs.iter().zip(incoming.iter_mut()) {
            reqs.push(self.comm.irecv(nb.rank, recv_tag(me, nb.rank), buf)?);
        }
        for (nb, buf) in self.nbrs.iter().zip(outgoing.iter()) {
            reqs.push(self.comm.isend(nb.rank, send_tag(me, nb.rank), buf)?);
        }
        dist_runtime::wait_all(reqs)?;
        for (nb, vals) in self.nbrs.iter().zip(&incoming) {
            for (&v, &val) in nb.recv_gids.iter().zip(vals) {
                self.ghost.insert(v, val);
            }
        }
        self.messages += 2 * self.nbrs.len();
        Ok(())
    }
}
