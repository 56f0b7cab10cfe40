//! How the sequence is split into one block of rows per rank.

#[derive(Debug, Clone)]
pub struct Layout {
    pub seq: usize,
    pub parts: usize,
    /// Elements per sequence row (heads × head dim).
    pub width: usize,
}

impl Layout {
    /// Rows `[start, end)` of block `j`: the first `seq % parts` blocks get one more.
    pub fn block(&self, j: usize) -> (usize, usize) {
        let base = self.seq / self.parts;
        let extra = self.seq % self.parts;
        let start = j * base + j.min(extra);
        (start, start + base + usize::from(j < extra))
    }

    pub fn rows(&self, j: usize) -> usize {
        let (a, b) = self.block(j);
        b - a
    }

    /// The longest block: every K/V message is padded to it.
    pub fn max_rows(&self) -> usize {
        (0..self.parts).map(|j| self.rows(j)).max().unwrap_or(0)
    }

    /// Elements of each rank's output, for `gather_v`.
    pub fn counts(&self) -> Vec<usize> {
        (0..self.parts).map(|j| self.rows(j) * self.width).collect()
    }

    /// The K/V message of block `j`: `[K rows | V rows]`, each padded to `max_rows()`.
    pub fn pack(&self, j: usize, k: &[f64], v: &[f64]) -> Vec<f64> {
        let (a, b) = self.block(j);
        let half = self.max_rows() * self.width;
        let mut msg = vec![0.0; 2 * half];
        let len = (b - a) * self.width;
        msg[..len].copy_from_slice(&k[a * self.width..b * self.width]);
        msg[half..half + len].copy_from_slice(&v[a * self.width..b * self.width]);
        msg
    }
}
