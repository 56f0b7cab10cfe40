//! Dense row-major blocks, the block distribution and the serial reference.

/// Part `idx` of `len` items split in `parts` nearly equal blocks: `lo..hi`.
pub fn block_range(len: usize, parts: usize, idx: usize) -> (usize, usize) {
    let (q, rem) = (len / parts, len % parts);
    let lo = idx * q + idx.min(rem);
    (lo, lo + q + usize::from(idx < rem))
}

/// The block of `len` split in `parts` that holds index `x`.
pub fn owner(len: usize, parts: usize, x: usize) -> usize {
    (0..parts).find(|&p| block_range(len, parts, p).1 > x).expect("index inside the range")
}

#[derive(Clone, Debug)]
pub struct Block {
    pub rows: usize,
    pub cols: usize,
    pub data: Vec<f64>,
}

impl Block {
    pub fn zeros(rows: usize, cols: usize) -> Block {
        Block { rows, cols, data: vec![0.0; rows * cols] }
    }

    /// The sub-block `rows × cols` of the global matrix `f(r, c)`.
    pub fn from_fn(rows: (usize, usize), cols: (usize, usize), f: impl Fn(usize, usize) -> f64) -> Block {
        let data = (rows.0..rows.1).flat_map(|r| (cols.0..cols.1).map(move |c| (r, c))).map(|(r, c)| f(r, c)).collect();
        Block { rows: rows.1 - rows.0, cols: cols.1 - cols.0, data }
    }

    /// Columns `c0..c0 + w` as a rows × w block.
    pub fn col_panel(&self, c0: usize, w: usize) -> Vec<f64> {
        self.data.chunks(self.cols).flat_map(|row| row[c0..c0 + w].iter().copied()).collect()
    }

    /// Rows `r0..r0 + w` as a w × cols block.
    pub fn row_panel(&self, r0: usize, w: usize) -> Vec<f64> {
        self.data[r0 * self.cols..(r0 + w) * self.cols].to_vec()
    }

    /// Writes `src` (src_rows × src_cols) at (r0, c0).
    pub fn place(&mut self, r0: usize, c0: usize, src: &[f64], src_cols: usize) {
        for (r, line) in src.chunks(src_cols.max(1)).enumerate() {
            let at = (r0 + r) * self.cols + c0;
            self.data[at..at + src_cols].copy_from_slice(line);
        }
    }
}

/// C (m×n) += A (m×k) · B (k×n).
pub fn gemm_acc(c: &mut [f64], a: &[f64], b: &[f64], m: usize, k: usize, n: usize) {
    for i in 0..m {
        for p in 0..k {
            let x = a[i * k + p];
            c[i * n..(i + 1) * n].iter_mut().zip(&b[p * n..(p + 1) * n]).for_each(|(c, b)| *c += x * b);
        }
    }
}

pub fn a_entry(r: usize, c: usize) -> f64 {
    ((r * 7 + c * 3) % 13) as f64 / 6.0 - 1.0
}

pub fn b_entry(r: usize, c: usize) -> f64 {
    ((r * 5 + c * 11 + 1) % 17) as f64 / 8.0 - 1.0
}
