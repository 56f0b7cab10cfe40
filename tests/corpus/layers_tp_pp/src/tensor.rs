//! Tiny dense helpers on row-major `Vec<f32>` matrices, and a seeded generator.

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
    pub fn uniform(&mut self) -> f32 {
        ((self.next_u64() >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
    pub fn vec(&mut self, n: usize, scale: f32) -> Vec<f32> {
        (0..n).map(|_| self.uniform() * scale).collect()
    }
}

/// a (m×k) · b (k×n)
pub fn matmul(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
    assert_eq!((a.len(), b.len()), (m * k, k * n));
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for p in 0..k {
            let x = a[i * k + p];
            for j in 0..n {
                c[i * n + j] += x * b[p * n + j];
            }
        }
    }
    c
}

/// aᵀ · b where a is k×m, b is k×n → m×n
pub fn matmul_tn(a: &[f32], b: &[f32], k: usize, m: usize, n: usize) -> Vec<f32> {
    assert_eq!((a.len(), b.len()), (k * m, k * n));
    let mut c = vec![0.0; m * n];
    for p in 0..k {
        for i in 0..m {
            let x = a[p * m + i];
            for j in 0..n {
                c[i * n + j] += x * b[p * n + j];
            }
        }
    }
    c
}

/// a · bᵀ where a is m×k, b is n×k → m×n
pub fn matmul_nt(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
    assert_eq!((a.len(), b.len()), (m * k, n * k));
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut s = 0.0;
            for p in 0..k {
                s += a[i * k + p] * b[j * k + p];
            }
            c[i * n + j] = s;
        }
    }
    c
}

/// Columns [c0, c1) of a rows×cols matrix.
pub fn columns(a: &[f32], rows: usize, cols: usize, c0: usize, c1: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(rows * (c1 - c0));
    for i in 0..rows {
        out.extend_from_slice(&a[i * cols + c0..i * cols + c1]);
    }
    out
}

pub fn max_rel_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs() / (1.0 + y.abs())).fold(0.0, f32::max)
}
