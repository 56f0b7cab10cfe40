//! The random graph (every rank generates the same edges from the seed), its block
//! distribution, and each rank's view of it.

use std::collections::BTreeSet;

use crate::config::Options;

pub fn hash(a: u64, b: u64, c: u64) -> u64 {
    let mut z = a ^ b.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ c.wrapping_mul(0xc2b2_ae3d_27d4_eb4f);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Every undirected edge once, as (low, high), sorted.
pub fn edges(o: &Options) -> Vec<(usize, usize)> {
    let n = o.vertices;
    let mut set = BTreeSet::new();
    for v in 0..n {
        for k in 0..o.degree {
            let h = hash(o.seed, v as u64, k as u64);
            let u = if h % 100 < o.long_range_pct {
                ((h >> 8) % n as u64) as usize
            } else {
                v + 1 + ((h >> 8) % o.span as u64) as usize
            };
            if u != v && u < n {
                set.insert((v.min(u), v.max(u)));
            }
        }
    }
    set.into_iter().collect()
}

/// Full adjacency lists (used by the serial reference and the checks).
pub fn adjacency(n: usize, edges: &[(usize, usize)]) -> Vec<Vec<usize>> {
    let mut adj = vec![Vec::new(); n];
    for &(a, b) in edges {
        adj[a].push(b);
        adj[b].push(a);
    }
    adj.iter_mut().for_each(|l| l.sort_unstable());
    adj
}

/// Vertices `starts[r]..starts[r + 1]` belong to rank r.
#[derive(Debug, Clone)]
pub struct BlockPartition {
    pub starts: Vec<usize>,
}

impl BlockPartition {
    pub fn new(vertices: usize, ranks: usize) -> Self {
        BlockPartition { starts: (0..=ranks).map(|r| r * vertices / ranks).collect() }
    }

    pub fn owner(&self, v: usize) -> usize {
        self.starts.partition_point(|&s| s <= v) - 1
    }

    pub fn range(&self, r: usize) -> std::ops::Range<usize> {
        self.starts[r]..self.starts[r + 1]
    }

    pub fn counts(&self) -> Vec<usize> {
        self.starts.windows(2).map(|w| w[1] - w[0]).collect()
    }
}

/// The part of the graph a rank needs: its vertices' neighbour lists.
pub struct LocalGraph {
    pub first: usize,
    pub adj: Vec<Vec<usize>>,
}

impl LocalGraph {
    pub fn build(o: &Options, part: &BlockPartition, rank: usize) -> LocalGraph {
        let range = part.range(rank);
        let mut adj = vec![Vec::new(); range.len()];
        for (a, b) in edges(o) {
            if range.contains(&a) {
                adj[a - range.start].push(b);
            }
            if range.contains(&b) {
                adj[b - range.start].push(a);
            }
        }
        adj.iter_mut().for_each(|l| l.sort_unstable());
        LocalGraph { first: range.start, adj }
    }

    pub fn len(&self) -> usize {
        self.adj.len()
    }
}
