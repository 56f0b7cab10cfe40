//! One load-balancing step: prefix sums of weights decide each item's new owner,
//! counts go around with all_to_all, the items with all_to_all_v.

use crate::items::{load, owner, Item, Policy};
use dist_runtime::prelude::*;

pub struct Balancer {
    comm: Comm<World>,
    policy: Policy,
}

impl Balancer {
    pub fn new(comm: &Comm<World>, policy: Policy) -> Self {
        Balancer { comm: comm.clone(), policy }
    }

    /// Total load and the largest rank's load, on every rank.
    pub fn loads(&self, items: &[Item]) -> dist_runtime::Result<(u64, u64)> {
        let mut total = [load(items)];
        self.comm.all_reduce(&mut total, ReduceOp::Sum)?;
        let mut max = [load(items)];
        self.comm.all_reduce(&mut max, ReduceOp::Max)?;
        Ok((total[0], max[0]))
    }

    /// Owners of this rank's items, in order (non-decreasing).
    fn destinations(&self, items: &[Item], total: u64) -> dist_runtime::Result<Vec<usize>> {
        let mut before = [load(items)];
        self.comm.exscan(&mut before, ReduceOp::Sum)?;
        let n = self.comm.size();
        let mut start = before[0];
        Ok(items
            .iter()
            .map(|it| {
                let d = owner(self.policy, start, it.weight, total, n);
                start += it.weight;
                d
            })
            .collect())
    }

    pub fn rebalance(&self, items: Vec<Item>, total: u64) -> dist_runtime::Result<Vec<Item>> {
        let n = self.comm.size();
        let dest = self.destinations(&items, total)?;
        let mut send_counts = vec![0u64; n];
        for &d in &dest {
            send_counts[d] += 1;
        }
        let mut recv_counts = vec![0u64; n];
        self.comm.all_to_all(&send_counts, &mut recv_counts)?;

        // Items are already grouped by destination: pack them as (id, weight) pairs.
        let payload: Vec<u64> = items.iter().flat_map(|it| [it.id, it.weight]).collect();
        let sc: Vec<usize> = send_counts.iter().map(|&c| 2 * c as usize).collect();
        let rc: Vec<usize> = recv_counts.iter().map(|&c| 2 * c as usize).collect();
        let mut incoming = vec![0u64; rc.iter().sum()];
        self.comm.all_to_all_v(&payload, &sc, &mut incoming, &rc)?;
        Ok(incoming.chunks_exact(2).map(|p| Item { id: p[0], weight: p[1] }).collect())
    }
}
