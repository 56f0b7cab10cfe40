//! The serial pieces: test matrices, an orthonormal DCT-II of one row, transposes,
//! and the serial 2-D transform the distributed one is checked against.

fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Entry (i, j) of test matrix number `batch`: smooth part plus noise, so that the
/// spectrum has a clear peak away from the DC term.
pub fn entry(seed: u64, batch: usize, i: usize, j: usize) -> f64 {
    let h = mix(seed ^ mix((batch as u64) << 40 ^ (i as u64) << 20 ^ j as u64));
    let noise = (h >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
    let wave = (0.9 * i as f64 + 0.4 * j as f64 + batch as f64).cos();
    2.0 * wave + noise
}

/// Rows `rows` of the `cols`-wide test matrix, row-major.
pub fn rows_of(seed: u64, batch: usize, rows: std::ops::Range<usize>, cols: usize) -> Vec<f64> {
    rows.flat_map(|i| (0..cols).map(move |j| entry(seed, batch, i, j))).collect()
}

/// Orthonormal DCT-II of `x`.
pub fn dct_row(x: &[f64]) -> Vec<f64> {
    let n = x.len();
    (0..n)
        .map(|k| {
            let s = if k == 0 { (1.0 / n as f64).sqrt() } else { (2.0 / n as f64).sqrt() };
            let sum: f64 = x
                .iter()
                .enumerate()
                .map(|(i, v)| v * (std::f64::consts::PI * (i as f64 + 0.5) * k as f64 / n as f64).cos())
                .sum();
            s * sum
        })
        .collect()
}

/// Applies the DCT to every `width`-long row of `m` in place.
pub fn dct_rows(m: &mut [f64], width: usize) {
    if width == 0 {
        return;
    }
    for row in m.chunks_mut(width) {
        let t = dct_row(row);
        row.copy_from_slice(&t);
    }
}

/// Transpose of the row-major `rows x cols` matrix `m`.
pub fn transpose(m: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    (0..cols).flat_map(|j| (0..rows).map(move |i| m[i * cols + j])).collect()
}

/// Index and magnitude of the largest |entry| (the first one on ties).
pub fn peak(m: &[f64]) -> Option<(usize, f64)> {
    m.iter().map(|v| v.abs()).enumerate().fold(None, |best, (i, a)| match best {
        Some((_, b)) if b >= a => best,
        _ => Some((i, a)),
    })
}

/// What the serial transform produces, stage by stage.
pub struct Reference {
    /// Rows transformed, then transposed (`cols x rows`).
    pub half: Vec<f64>,
    /// The 2-D DCT, still transposed (`cols x rows`).
    pub full_t: Vec<f64>,
    /// The 2-D DCT (`rows x cols`).
    pub full: Vec<f64>,
}

pub fn serial(seed: u64, batch: usize, rows: usize, cols: usize) -> Reference {
    let mut a = rows_of(seed, batch, 0..rows, cols);
    dct_rows(&mut a, cols);
    let half = transpose(&a, rows, cols);
    let mut full_t = half.clone();
    dct_rows(&mut full_t, rows);
    let full = transpose(&full_t, cols, rows);
    Reference { half, full_t, full }
}
