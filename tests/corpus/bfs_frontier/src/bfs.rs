//! Level-synchronous BFS over block-distributed vertices, and the serial reference.

use std::collections::VecDeque;

use dist_runtime::prelude::*;

use crate::exchange::FrontierExchange;
use crate::graph::{LocalGraph, Partition};

pub const UNREACHED: i64 = -1;

pub struct DistBfs<'g> {
    world: Comm<World>,
    part: Partition,
    graph: &'g LocalGraph,
    exchange: FrontierExchange,
    /// Distances of the owned vertices lo..hi.
    pub dist: Vec<i64>,
}

impl<'g> DistBfs<'g> {
    pub fn new(world: &Comm<World>, part: Partition, graph: &'g LocalGraph) -> Self {
        let exchange = FrontierExchange::new(world.clone());
        DistBfs { world: world.clone(), part, graph, exchange, dist: vec![UNREACHED; graph.hi - graph.lo] }
    }

    /// Runs BFS from `source`; returns the number of levels.
    pub fn run(&mut self, source: u64) -> dist_runtime::Result<usize> {
        let n = self.world.size();
        let lo = self.graph.lo;
        let mut frontier = Vec::new();
        if self.part.owner(source) == self.world.rank() {
            self.dist[source as usize - lo] = 0;
            frontier.push(source);
        }
        let mut level = 0;
        loop {
            // Every neighbour of the frontier goes to its owner.
            let mut outgoing: Vec<Vec<u64>> = vec![Vec::new(); n];
            frontier
                .iter()
                .flat_map(|&v| self.graph.neighbors(v))
                .for_each(|&u| outgoing[self.part.owner(u)].push(u));
            let incoming = self.exchange.exchange(&outgoing)?;
            level += 1;

            let mut next = Vec::new();
            for u in incoming {
                let d = &mut self.dist[u as usize - lo];
                if *d == UNREACHED {
                    *d = level as i64;
                    next.push(u);
                }
            }
            frontier = next;

            let mut active = [frontier.len() as u64];
            self.world.all_reduce(&mut active, ReduceOp::Sum)?;
            if active[0] == 0 {
                break;
            }
        }
        Ok(level)
    }

    /// All distances on `root` (`Some` there only), gathered in vertex order.
    pub fn gather(&self, root: usize) -> dist_runtime::Result<Option<Vec<i64>>> {
        let counts = self.part.counts();
        if self.world.rank() == root {
            let mut all = vec![0i64; self.part.nv];
            self.world.gather_v(&self.dist, Some(&mut all[..]), &counts, root)?;
            Ok(Some(all))
        } else {
            self.world.gather_v(&self.dist, None, &counts, root)?;
            Ok(None)
        }
    }

    pub fn traffic(&self) -> (usize, usize) {
        (self.exchange.sent, self.exchange.received)
    }
}

pub fn serial_bfs(graph: &LocalGraph, nv: usize, source: u64) -> Vec<i64> {
    let mut dist = vec![UNREACHED; nv];
    let mut queue = VecDeque::from([source]);
    dist[source as usize] = 0;
    while let Some(v) = queue.pop_front() {
        for &u in graph.neighbors(v) {
            if dist[u as usize] == UNREACHED {
                dist[u as usize] = dist[v as usize] + 1;
                queue.push_back(u);
            }
        }
    }
    dist
}
