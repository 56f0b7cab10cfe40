//! The shuffle: (word, count) pairs to the word's owner. Counts first (all_to_all), then
//! the pairs themselves (all_to_all_v), flattened as [key, count, key, count, …].

use crate::records::owner_of;
use dist_runtime::prelude::*;
use std::collections::BTreeMap;

pub struct Shuffler {
    world: Comm<World>,
    pub pairs_sent: usize,
    pub pairs_received: usize,
}

impl Shuffler {
    pub fn new(world: &Comm<World>) -> Self {
        Shuffler { world: world.clone(), pairs_sent: 0, pairs_received: 0 }
    }

    /// Combines `words` locally and sorts the pairs into one bucket per owner.
    pub fn buckets(&self, words: &[u64]) -> Vec<Vec<(u64, u64)>> {
        let n = self.world.size();
        let mut local: BTreeMap<u64, u64> = BTreeMap::new();
        words.iter().for_each(|&w| *local.entry(w).or_default() += 1);
        let mut out = vec![Vec::new(); n];
        for (k, c) in local {
            out[owner_of(k, n)].push((k, c));
        }
        out
    }

    /// Sends each bucket to its owner; returns the pairs this rank owns (unmerged).
    pub fn exchange(&mut self, buckets: &[Vec<(u64, u64)>]) -> dist_runtime::Result<Vec<(u64, u64)>> {
        let send_pairs: Vec<u64> = buckets.iter().map(|b| b.len() as u64).collect();
        let mut recv_pairs = vec![0u64; self.world.size()];
        self.world.all_to_all(&send_pairs, &mut recv_pairs)?;

        let send: Vec<u64> = buckets.iter().flatten().flat_map(|&(k, c)| [k, c]).collect();
        let send_counts: Vec<usize> = send_pairs.iter().map(|&c| 2 * c as usize).collect();
        let recv_counts: Vec<usize> = recv_pairs.iter().map(|&c| 2 * c as usize).collect();
        let mut recv = vec![0u64; recv_counts.iter().sum()];
        self.world.all_to_all_v(&send, &send_counts, &mut recv, &recv_counts)?;

        self.pairs_sent += buckets.iter().map(Vec::len).sum::<usize>();
        self.pairs_received += recv.len() / 2;
        Ok(recv.chunks_exact(2).map(|p| (p[0], p[1])).collect())
    }
}
