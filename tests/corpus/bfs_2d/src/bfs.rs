//! BFS on a 2-D partition of the adjacency matrix. Rank (i, j) holds the edges u → v
//! with u in column block C_j (the vertices owned by grid column j) and v in row block
//! R_i (those owned by grid row i). Each level expands the frontier along the column
//! (all_gather_v) and folds the discovered vertices to their owners along the row
//! (all_to_all_v, counts first).

use crate::graph::Partition;
use crate::grid::{Col, ProcGrid, Row};
use dist_runtime::prelude::*;
use std::collections::BTreeMap;

pub struct Bfs2d {
    grid: ProcGrid,
    part: Partition,
    /// Local block of the adjacency matrix: source vertex → destinations.
    block: BTreeMap<usize, Vec<usize>>,
    /// First vertex this rank owns, and the levels of its vertices.
    lo: usize,
    pub levels: Vec<i64>,
    dedup: bool,
}

/// Every member's `mine`, concatenated in rank order (counts exchanged first).
fn gather_frontier(col: &Comm<Col>, mine: &[u64]) -> dist_runtime::Result<Vec<u64>> {
    let mut counts = vec![0u64; col.size()];
    col.all_gather(&[mine.len() as u64], &mut counts)?;
    let counts: Vec<usize> = counts.iter().map(|&c| c as usize).collect();
    let mut all = vec![0u64; counts.iter().sum()];
    col.all_gather_v(mine, &mut all, &counts)?;
    Ok(all)
}

/// Sends `outgoing[j]` to row member j and returns what the row sent here.
fn fold(row: &Comm<Row>, outgoing: Vec<Vec<u64>>) -> dist_runtime::Result<Vec<u64>> {
    let send_counts: Vec<u64> = outgoing.iter().map(|v| v.len() as u64).collect();
    let mut recv_counts = vec![0u64; row.size()];
    row.all_to_all(&send_counts, &mut recv_counts)?;
    let send: Vec<u64> = outgoing.into_iter().flatten().collect();
    let sc: Vec<usize> = send_counts.iter().map(|&c| c as usize).collect();
    let rc: Vec<usize> = recv_counts.iter().map(|&c| c as usize).collect();
    let mut recv = vec![0u64; rc.iter().sum()];
    row.all_to_all_v(&send, &sc, &mut recv, &rc)?;
    Ok(recv)
}

impl Bfs2d {
    pub fn new(grid: ProcGrid, nv: usize, edges: &[(usize, usize)], dedup: bool) -> Bfs2d {
        let part = Partition::new(nv, grid.world.size());
        let (i, j) = grid.coords();
        let pc = grid.pc;
        let mut block: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for &(u, v) in edges.iter().filter(|&&(u, v)| part.owner(u) % pc == j && part.owner(v) / pc == i) {
            block.entry(u).or_default().push(v);
        }
        let (lo, hi) = part.range(grid.world.rank());
        Bfs2d { grid, part, block, lo, levels: vec![-1; hi - lo], dedup }
    }

    fn owns(&self, v: usize) -> bool {
        v >= self.lo && v < self.lo + self.levels.len()
    }

    /// Vertices reached from the column's frontier through the local block, bucketed by
    /// the row member that owns them.
    fn expand(&self, col_frontier: &[u64]) -> Vec<Vec<u64>> {
        let mut found: Vec<usize> = col_frontier
            .iter()
            .filter_map(|&u| self.block.get(&(u as usize)))
            .flat_map(|vs| vs.iter().copied())
            .collect();
        if self.dedup {
            found.sort_unstable();
            found.dedup();
        }
        let mut out = vec![Vec::new(); self.grid.pc];
        for v in found {
            out[self.part.owner(v) % self.grid.pc].push(v as u64);
        }
        out
    }

    /// Runs the search; returns the number of levels.
    pub fn run(&mut self, source: usize, max_levels: usize) -> dist_runtime::Result<usize> {
        let mut frontier: Vec<u64> = Vec::new();
        if self.owns(source) {
            self.levels[source - self.lo] = 0;
            frontier.push(source as u64);
        }
        let mut depth = 0;
        while depth < max_levels {
            let col_frontier = gather_frontier(&self.grid.col, &frontier)?;
            let outgoing = self.expand(&col_frontier);
            let arrived = fold(&self.grid.row, outgoing)?;
            let mut next = Vec::new();
            for v in arrived.into_iter().map(|v| v as usize) {
                let slot = &mut self.levels[v - self.lo];
                if *slot < 0 {
                    *slot = depth as i64 + 1;
                    next.push(v as u64);
                }
            }
            depth += 1;
            let mut total = [next.len() as u64];
            self.grid.world.all_reduce(&mut total, ReduceOp::Sum)?;
            if total[0] == 0 {
                break;
            }
            frontier = next;
        }
        Ok(depth)
    }

    /// All levels, in vertex order, on `root`.
    pub fn gather_levels(&self, root: usize) -> dist_runtime::Result<Option<Vec<i64>>> {
        let world = &self.grid.world;
        let counts = self.part.counts();
        if world.rank() == root {
            let mut all = vec![0i64; counts.iter().sum()];
            world.gather_v(&self.levels, Some(&mut all[..]), &counts, root)?;
            Ok(Some(all))
        } else {
            world.gather_v(&self.levels, None, &counts, root)?;
            Ok(None)
        }
    }
}
