//! A deterministic undirected graph (a ring plus hashed chords), its block partition,
//! and the right-hand side.

use std::collections::BTreeSet;
use std::ops::Range;

pub struct Graph {
    /// Sorted neighbour lists.
    pub adj: Vec<Vec<usize>>,
}

fn hash(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Graph {
    pub fn generate(nv: usize, chords: usize, seed: u64) -> Graph {
        let mut sets: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); nv];
        let mut link = |a: usize, b: usize| {
            if a != b {
                sets[a].insert(b);
                sets[b].insert(a);
            }
        };
        for v in 0..nv {
            link(v, (v + 1) % nv);
            for c in 0..chords {
                let far = hash(seed ^ ((v * 131 + c) as u64)) % nv as u64;
                link(v, far as usize);
            }
        }
        Graph { adj: sets.into_iter().map(|s| s.into_iter().collect()).collect() }
    }

    pub fn len(&self) -> usize {
        self.adj.len()
    }

    pub fn degree(&self, v: usize) -> usize {
        self.adj[v].len()
    }
}

pub fn rhs(v: usize) -> f64 {
    1.0 + (0.37 * v as f64).sin()
}

/// Vertices `[n·r/p, n·(r+1)/p)` live on rank r.
#[derive(Clone, Copy, Debug)]
pub struct Partition {
    pub n: usize,
    pub parts: usize,
}

impl Partition {
    pub fn range(&self, r: usize) -> Range<usize> {
        (self.n * r / self.parts)..(self.n * (r + 1) / self.parts)
    }

    pub fn owner(&self, v: usize) -> usize {
        let mut r = (v * self.parts) / self.n;
        while !self.range(r).contains(&v) {
            r += 1;
        }
        r
    }
}
