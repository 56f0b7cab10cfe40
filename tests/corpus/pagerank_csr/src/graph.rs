//! Deterministic graph generation and the block partition of vertices.

/// A small linear congruential generator (Knuth's MMIX constants).
pub struct Lcg(u64);

impl Lcg {
    pub fn new(seed: u64) -> Lcg {
        Lcg(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(1))
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

/// Out-neighbours of vertex `v`: the same on every rank, whoever generates them.
pub fn out_neighbours(v: usize, n: usize, avg_degree: usize, seed: u64) -> Vec<usize> {
    let mut g = Lcg::new(seed ^ (v as u64).wrapping_mul(0x100_0000_01B3));
    // Every seventh vertex (roughly) is dangling.
    let deg = if g.next() % 7 == 0 { 0 } else { (g.next() as usize) % (2 * avg_degree + 1) };
    let mut out: Vec<usize> = (0..deg).map(|_| g.next() as usize % n).filter(|&u| u != v).collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// Vertices split into `parts` contiguous blocks; the first `n % parts` get one extra.
#[derive(Debug, Clone, Copy)]
pub struct Partition {
    pub n: usize,
    pub parts: usize,
}

impl Partition {
    pub fn range(&self, p: usize) -> std::ops::Range<usize> {
        let (base, extra) = (self.n / self.parts, self.n % self.parts);
        let start = p * base + p.min(extra);
        start..start + base + usize::from(p < extra)
    }
    pub fn owner(&self, v: usize) -> usize {
        let (base, extra) = (self.n / self.parts, self.n % self.parts);
        let cut = extra * (base + 1);
        if v < cut { v / (base + 1) } else { extra + (v - cut) / base }
    }
    pub fn counts(&self) -> Vec<usize> {
        (0..self.parts).map(|p| self.range(p).len()).collect()
    }
}

/// The CSR rows of the vertices one rank owns.
pub struct LocalCsr {
    pub first: usize,
    pub row_ptr: Vec<usize>,
    pub cols: Vec<usize>,
}

impl LocalCsr {
    pub fn build(rows: std::ops::Range<usize>, n: usize, avg_degree: usize, seed: u64) -> LocalCsr {
        let mut row_ptr = vec![0];
        let mut cols = Vec::new();
        for v in rows.clone() {
            cols.extend(out_neighbours(v, n, avg_degree, seed));
            row_ptr.push(cols.len());
        }
        LocalCsr { first: rows.start, row_ptr, cols }
    }
    pub fn rows(&self) -> usize {
        self.row_ptr.len() - 1
    }
    pub fn row(&self, i: usize) -> &[usize] {
        &self.cols[self.row_ptr[i]..self.row_ptr[i + 1]]
    }
}
