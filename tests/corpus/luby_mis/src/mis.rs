//! Luby's algorithm over block-distributed vertices. Each round: priorities of the
//! boundary vertices go to the ranks that own their neighbours, local maxima join the
//! set, the new members are announced the same way, and their neighbours drop out.

use std::collections::BTreeMap;

use dist_runtime::prelude::*;
use dist_runtime::Element;

use crate::graph::{BlockPartition, LocalGraph};
use crate::priority::{beats, draw, Status};

const NOTIFY: Tag<u8> = Tag::new(3);

#[derive(Debug)]
pub enum MisError {
    Comm(dist_runtime::Error),
    Setup(String),
    NoProgress(usize),
}

impl std::fmt::Display for MisError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MisError::Comm(e) => write!(f, "{e}"),
            MisError::Setup(m) => write!(f, "inconsistent boundary lists: {m}"),
            MisError::NoProgress(r) => write!(f, "vertices still undecided after {r} rounds"),
        }
    }
}

impl std::error::Error for MisError {}

impl From<dist_runtime::Error> for MisError {
    fn from(e: dist_runtime::Error) -> Self {
        MisError::Comm(e)
    }
}

/// Who needs what: `send[q]` lists local vertices (as local indices) with a neighbour
/// on rank q; `recv[q]` the vertices of rank q (global ids) next to ours, both sorted.
struct Boundary {
    /// Ranks that own a neighbour of one of our vertices (the graph is undirected, so
    /// they are also the ranks that need our values).
    peers: Vec<usize>,
    send: Vec<Vec<usize>>,
    recv: Vec<Vec<usize>>,
    send_counts: Vec<usize>,
    recv_counts: Vec<usize>,
    /// Global id of a remote neighbour → its slot in the received buffer.
    ghost_slot: BTreeMap<usize, usize>,
}

pub struct LubyMis {
    world: Comm<World>,
    part: BlockPartition,
    graph: LocalGraph,
    seed: u64,
    status: Vec<Status>,
    boundary: Boundary,
    pub rounds: usize,
}

impl LubyMis {
    /// Collective: builds the boundary lists and checks them against the neighbours'.
    pub fn new(world: Comm<World>, part: BlockPartition, graph: LocalGraph, seed: u64) -> Result<Self, MisError> {
        let (me, n) = (world.rank(), world.size());
        let mut send = vec![Vec::new(); n];
        let mut recv_sets = vec![std::collections::BTreeSet::new(); n];
        for (i, nbrs) in graph.adj.iter().enumerate() {
            let mut owners: Vec<usize> = nbrs.iter().map(|&u| part.owner(u)).filter(|&q| q != me).collect();
            for &u in nbrs {
                let q = part.owner(u);
                if q != me {
                    recv_sets[q].insert(u);
                }
            }
            owners.sort_unstable();
            owners.dedup();
            owners.into_iter().for_each(|q| send[q].push(i));
        }
        let recv: Vec<Vec<usize>> = recv_sets.into_iter().map(|s| s.into_iter().collect()).collect();
        let send_counts: Vec<usize> = send.iter().map(Vec::len).collect();
        let recv_counts: Vec<usize> = recv.iter().map(Vec::len).collect();

        // What each neighbour will send us must be what we expect to receive.
        let mut announced = vec![0u64; n];
        let counts64: Vec<u64> = send_counts.iter().map(|&c| c as u64).collect();
        world.all_to_all(&counts64, &mut announced)?;
        if let Some(q) = (0..n).find(|&q| announced[q] as usize != recv_counts[q]) {
            return Err(MisError::Setup(format!(
                "rank {q} will send {} boundary values, rank {me} expects {}",
                announced[q], recv_counts[q]
            )));
        }

        let peers: Vec<usize> = (0..n).filter(|&q| !send[q].is_empty()).collect();
        let ghost_slot = recv.iter().flatten().enumerate().map(|(slot, &u)| (u, slot)).collect();
        let status = vec![Status::Undecided; graph.len()];
        Ok(LubyMis {
            world,
            part,
            graph,
            seed,
            status,
            boundary: Boundary { peers, send, recv, send_counts, recv_counts, ghost_slot },
            rounds: 0,
        })
    }

    /// Sends `value(i)` of each boundary vertex to the ranks that need it; returns the
    /// values of remote neighbours, indexed by ghost slot.
    fn exchange<T: Element + Copy + Default>(&self, value: impl Fn(usize) -> T) -> dist_runtime::Result<Vec<T>> {
        let b = &self.boundary;
        let out: Vec<T> = b.send.iter().flat_map(|list| list.iter().map(|&i| value(i))).collect();
        let mut ghosts = vec![T::default(); b.recv.iter().map(Vec::len).sum()];
        self.world.all_to_all_v(&out, &b.send_counts, &mut ghosts, &b.recv_counts)?;
        Ok(ghosts)
    }

    /// Sends the membership flag of each boundary vertex to the neighbouring ranks only
    /// (point-to-point: most rank pairs share no edge); returns the flags of remote
    /// neighbours, indexed by ghost slot.
    fn notify(&self, flags: &[u8]) -> dist_runtime::Result<Vec<u8>> {
        let b = &self.boundary;
        let outgoing: Vec<Vec<u8>> =
            b.peers.iter().map(|&q| b.send[q].iter().map(|&i| flags[i]).collect()).collect();
        let mut incoming: Vec<Vec<u8>> = b.peers.iter().map(|&q| vec![0u8; b.recv[q].len()]).collect();
        let mut pending = Vec::with_capacity(2 * b.peers.len());
        for (&q, buf) in b.peers.iter().zip(incoming.iter_mut()) {
            pending.push(self.world.irecv(q, NOTIFY, buf)?);
        }
        for (&q, out) in b.peers.iter().zip(&outgoing) {
            pending.push(self.world.isend(q, NOTIFY, out)?);
        }
        dist_runtime::wait_all(pending)?;
        // Peers come in rank order and the other ranks' lists are empty, so this is
        // the ghost-slot order.
        Ok(incoming.concat())
    }

    fn neighbour_value<T: Copy>(&self, u: usize, local: &[T], ghosts: &[T]) -> T {
        if self.part.range(self.world.rank()).contains(&u) {
            local[u - self.graph.first]
        } else {
            ghosts[self.boundary.ghost_slot[&u]]
        }
    }

    fn undecided(&self) -> usize {
        self.status.iter().filter(|&&s| s == Status::Undecided).count()
    }

    /// One round of Luby's algorithm.
    fn round(&mut self) -> dist_runtime::Result<()> {
        let first = self.graph.first;
        let prio: Vec<u64> = (0..self.graph.len())
            .map(|i| match self.status[i] {
                Status::Undecided => draw(self.seed, self.rounds, first + i),
                _ => 0,
            })
            .collect();
        let ghost_prio = self.exchange(|i| prio[i])?;

        let joins: Vec<bool> = (0..self.graph.len())
            .map(|i| {
                self.status[i] == Status::Undecided
                    && self.graph.adj[i]
                        .iter()
                        .all(|&u| beats(prio[i], first + i, self.neighbour_value(u, &prio, &ghost_prio), u))
            })
            .collect();
        joins.iter().enumerate().filter(|(_, &j)| j).for_each(|(i, _)| self.status[i] = Status::InSet);

        let in_set: Vec<u8> = self.status.iter().map(|&s| u8::from(s == Status::InSet)).collect();
        let ghost_in_set = self.notify(&in_set)?;
        for i in 0..self.graph.len() {
            if self.status[i] == Status::Undecided
                && self.graph.adj[i].iter().any(|&u| self.neighbour_value(u, &in_set, &ghost_in_set) == 1)
            {
                self.status[i] = Status::Excluded;
            }
        }
        self.rounds += 1;
        Ok(())
    }

    /// Rounds until no vertex anywhere is undecided.
    pub fn run(&mut self, max_rounds: usize) -> Result<(), MisError> {
        loop {
            let mut left = [self.undecided() as u64];
            self.world.all_reduce(&mut left, ReduceOp::Sum)?;
            if left[0] == 0 {
                return Ok(());
            }
            if self.rounds == max_rounds {
                return Err(MisError::NoProgress(self.rounds));
            }
            self.round()?;
        }
    }

    /// 1 for members of the set, per local vertex.
    pub fn membership(&self) -> Vec<u8> {
        self.status.iter().map(|&s| u8::from(s == Status::InSet)).collect()
    }

    pub fn boundary_sizes(&self) -> (usize, usize) {
        (self.boundary.send.iter().map(Vec::len).sum(), self.boundary.recv.len())
    }
}
