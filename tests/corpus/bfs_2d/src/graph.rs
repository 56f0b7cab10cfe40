//! The synthetic graph, the 1-D partition of its vertices and the serial BFS.

use std::collections::VecDeque;

pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Undirected edges (both directions listed) of a random graph on `nv` vertices with
/// about `degree` edges per vertex; the same on every rank for the same seed.
pub fn edges(nv: usize, degree: usize, seed: u64) -> Vec<(usize, usize)> {
    let mut g = Rng::new(seed);
    let m = nv * degree / 2;
    (0..m)
        .map(|_| ((g.next_u64() % nv as u64) as usize, (g.next_u64() % nv as u64) as usize))
        .filter(|(a, b)| a != b)
        .flat_map(|(a, b)| [(a, b), (b, a)])
        .collect()
}

/// Vertices split into `n` contiguous pieces, piece k owned by rank k.
pub struct Partition {
    starts: Vec<usize>,
}

impl Partition {
    pub fn new(nv: usize, n: usize) -> Partition {
        Partition { starts: (0..=n).map(|k| nv * k / n).collect() }
    }
    pub fn range(&self, k: usize) -> (usize, usize) {
        (self.starts[k], self.starts[k + 1])
    }
    pub fn counts(&self) -> Vec<usize> {
        self.starts.windows(2).map(|w| w[1] - w[0]).collect()
    }
    pub fn owner(&self, v: usize) -> usize {
        self.starts.partition_point(|&s| s <= v) - 1
    }
}

/// Serial BFS levels from `source` (-1: unreachable).
pub fn serial_bfs(nv: usize, edges: &[(usize, usize)], source: usize) -> Vec<i64> {
    let mut adj = vec![Vec::new(); nv];
    for &(a, b) in edges {
        adj[a].push(b);
    }
    let mut level = vec![-1i64; nv];
    level[source] = 0;
    let mut queue = VecDeque::from([source]);
    while let Some(u) = queue.pop_front() {
        for &v in &adj[u] {
            if level[v] < 0 {
                level[v] = level[u] + 1;
                queue.push_back(v);
            }
        }
    }
    level
}
