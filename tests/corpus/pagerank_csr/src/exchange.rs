//! Who sends which contribution where: built once, reused every iteration.

use std::collections::BTreeMap;

use dist_runtime::prelude::*;

use crate::graph::{LocalCsr, Partition};

pub struct ContributionPlan {
    comm: Comm<World>,
    send_counts: Vec<usize>,
    recv_counts: Vec<usize>,
    /// For each local edge (in CSR order), its slot in the send buffer.
    slot_of_edge: Vec<usize>,
    /// For each received slot, the local row it adds to.
    recv_rows: Vec<usize>,
}

impl ContributionPlan {
    pub fn new(comm: Comm<World>, csr: &LocalCsr, part: &Partition) -> dist_runtime::Result<ContributionPlan> {
        let p = comm.size();
        // One slot per distinct target vertex per destination rank, in vertex order.
        let mut per_dest: Vec<BTreeMap<usize, usize>> = vec![BTreeMap::new(); p];
        for &v in &csr.cols {
            per_dest[part.owner(v)].insert(v, 0);
        }
        let send_counts: Vec<usize> = per_dest.iter().map(|m| m.len()).collect();
        let mut offset = 0;
        for m in per_dest.iter_mut() {
            for slot in m.values_mut() {
                *slot = offset;
                offset += 1;
            }
        }
        let slot_of_edge: Vec<usize> = csr.cols.iter().map(|&v| per_dest[part.owner(v)][&v]).collect();
        let targets: Vec<u64> = per_dest.iter().flat_map(|m| m.keys().map(|&v| v as u64)).collect();

        // Tell every rank how many slots to expect from us, then which vertices they are.
        let counts_out: Vec<u64> = send_counts.iter().map(|&c| c as u64).collect();
        let mut counts_in = vec![0u64; p];
        comm.all_to_all(&counts_out, &mut counts_in)?;
        let recv_counts: Vec<usize> = counts_in.iter().map(|&c| c as usize).collect();
        let mut recv_targets = vec![0u64; recv_counts.iter().sum()];
        comm.all_to_all_v(&targets, &send_counts, &mut recv_targets, &recv_counts)?;
        let first = csr.first;
        let recv_rows = recv_targets.iter().map(|&v| v as usize - first).collect();
        Ok(ContributionPlan { comm, send_counts, recv_counts, slot_of_edge, recv_rows })
    }

    pub fn send_len(&self) -> usize {
        self.send_counts.iter().sum()
    }

    pub fn slot(&self, edge: usize) -> usize {
        self.slot_of_edge[edge]
    }

    /// Sends the per-slot sums out and returns what arrives, added up per local row.
    pub fn exchange(&mut self, outgoing: &[f64], local_rows: usize) -> dist_runtime::Result<Vec<f64>> {
        let mut arrived = vec![0.0; self.recv_rows.len()];
        self.comm.all_to_all_v(outgoing, &self.send_counts, &mut arrived, &self.recv_counts)?;
        let mut incoming = vec![0.0; local_rows];
        for (row, x) in self.recv_rows.iter().zip(&arrived) {
            incoming[*row] += x;
        }
        Ok(incoming)
    }
}
