//! A generated undirected graph, its block partition over the ranks and the CSR rows
//! of the vertices a rank owns.

/// Vertices `0..nv` in `parts` contiguous blocks, the first `nv % parts` one larger.
#[derive(Clone, Copy, Debug)]
pub struct Partition {
    pub nv: usize,
    pub parts: usize,
}

impl Partition {
    pub fn range(&self, p: usize) -> (usize, usize) {
        let (q, rem) = (self.nv / self.parts, self.nv % self.parts);
        let lo = p * q + p.min(rem);
        (lo, lo + q + usize::from(p < rem))
    }

    pub fn owner(&self, v: u64) -> usize {
        let (q, rem) = (self.nv / self.parts, self.nv % self.parts);
        let v = v as usize;
        if v < rem * (q + 1) {
            v / (q + 1)
        } else {
            rem + (v - rem * (q + 1)) / q
        }
    }

    pub fn counts(&self) -> Vec<usize> {
        (0..self.parts).map(|p| self.range(p)).map(|(lo, hi)| hi - lo).collect()
    }
}

/// xorshift64*, the same stream on every rank.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n.max(1)
    }
}

/// Mostly short edges (a long, thin graph with many BFS levels), a few long ones, and
/// every 13th vertex left isolated so some distances stay unreached.
pub fn generate_edges(nv: usize, degree: usize, seed: u64) -> Vec<(u64, u64)> {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let isolated = |v: u64| v % 13 == 7;
    let mut edges = Vec::new();
    for v in (0..nv as u64).filter(|&v| !isolated(v)) {
        for _ in 0..degree {
            let u = if rng.below(10) == 0 { rng.below(nv as u64) } else { (v + 1 + rng.below(4)) % nv as u64 };
            if u != v && !isolated(u) {
                edges.push((v, u));
            }
        }
    }
    edges
}

/// CSR adjacency of vertices `lo..hi` (both directions of every edge).
pub struct LocalGraph {
    pub lo: usize,
    pub hi: usize,
    offsets: Vec<usize>,
    adj: Vec<u64>,
}

impl LocalGraph {
    pub fn build(edges: &[(u64, u64)], lo: usize, hi: usize) -> LocalGraph {
        let mine = |v: u64| (lo..hi).contains(&(v as usize));
        let mut rows: Vec<Vec<u64>> = vec![Vec::new(); hi - lo];
        for &(a, b) in edges {
            if mine(a) {
                rows[a as usize - lo].push(b);
            }
            if mine(b) {
                rows[b as usize - lo].push(a);
            }
        }
        let offsets = std::iter::once(0)
            .chain(rows.iter().scan(0, |acc, r| {
                *acc += r.len();
                Some(*acc)
            }))
            .collect();
        LocalGraph { lo, hi, offsets, adj: rows.concat() }
    }

    pub fn neighbors(&self, v: u64) -> &[u64] {
        let i = v as usize - self.lo;
        &self.adj[self.offsets[i]..self.offsets[i + 1]]
    }
}
