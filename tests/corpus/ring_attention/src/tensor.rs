//! Dense row-major f32 blocks and the few kernels attention needs.

use std::ops::Range;

/// SplitMix64, so every rank draws the same matrices from the same seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn uniform(&mut self) -> f32 {
        ((self.next_u64() >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
}

#[derive(Clone, Debug)]
pub struct Mat {
    pub rows: usize,
    pub cols: usize,
    pub data: Vec<f32>,
}

impl Mat {
    pub fn zeros(rows: usize, cols: usize) -> Self {
        Mat { rows, cols, data: vec![0.0; rows * cols] }
    }

    pub fn random(rows: usize, cols: usize, rng: &mut Rng) -> Self {
        Mat { rows, cols, data: (0..rows * cols).map(|_| rng.uniform()).collect() }
    }

    pub fn row(&self, i: usize) -> &[f32] {
        &self.data[i * self.cols..(i + 1) * self.cols]
    }

    pub fn row_mut(&mut self, i: usize) -> &mut [f32] {
        &mut self.data[i * self.cols..(i + 1) * self.cols]
    }

    /// Rows `r` as a new matrix.
    pub fn slice_rows(&self, r: Range<usize>) -> Mat {
        Mat { rows: r.len(), cols: self.cols, data: self.data[r.start * self.cols..r.end * self.cols].to_vec() }
    }
}

/// `a · bᵀ`, scaled: scores of every row of `a` against every row of `b`.
pub fn scores(a: &Mat, b: &Mat, scale: f32) -> Mat {
    assert_eq!(a.cols, b.cols);
    let mut out = Mat::zeros(a.rows, b.rows);
    for i in 0..a.rows {
        let qi = a.row(i);
        for j in 0..b.rows {
            out.data[i * b.rows + j] = qi.iter().zip(b.row(j)).map(|(x, y)| x * y).sum::<f32>() * scale;
        }
    }
    out
}

/// The contiguous block of `len` items that part `i` of `parts` owns; the first
/// `len % parts` parts get one extra.
pub fn block_range(len: usize, parts: usize, i: usize) -> Range<usize> {
    let base = len / parts;
    let extra = len % parts;
    let start = i * base + i.min(extra);
    start..start + base + usize::from(i < extra)
}

pub fn max_rel_diff(got: &[f32], want: &[f32]) -> f32 {
    let scale = want.iter().fold(1e-6f32, |m, x| m.max(x.abs()));
    got.iter().zip(want).map(|(a, b)| (a - b).abs() / scale).fold(0.0, f32::max)
}
