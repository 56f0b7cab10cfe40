//! Small numeric helpers shared by the examples: a seeded generator, dense row-major
//! matrices on `Vec<f64>`, the activations and the checks. Plain loops, so the examples
//! read like the papers. Unit-tested below (`cargo test -p dist-runtime --example
//! data_parallel` runs them; CI does through `cargo test --workspace`).
#![allow(dead_code)]

/// SplitMix64: the same stream on every rank for the same seed.
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
    /// Uniform in [-1, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }
    pub fn vec(&mut self, n: usize, scale: f64) -> Vec<f64> {
        (0..n).map(|_| self.uniform() * scale).collect()
    }
}

/// `a (m×k) · b (k×n)` → m×n, all row-major.
pub fn matmul(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
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

/// `aᵀ (k×m)ᵀ · b (k×n)` → m×n: `a` is k×m.
pub fn matmul_tn(a: &[f64], b: &[f64], k: usize, m: usize, n: usize) -> Vec<f64> {
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

/// `a (m×k) · bᵀ` where `b` is n×k → m×n.
pub fn matmul_nt(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
    assert_eq!((a.len(), b.len()), (m * k, n * k));
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            c[i * n + j] = (0..k).map(|p| a[i * k + p] * b[j * k + p]).sum();
        }
    }
    c
}

/// Columns `c0..c1` of the row-major `rows × cols` matrix `a`.
pub fn columns(a: &[f64], rows: usize, cols: usize, c0: usize, c1: usize) -> Vec<f64> {
    (0..rows).flat_map(|i| a[i * cols + c0..i * cols + c1].to_vec()).collect()
}

/// GeLU (tanh approximation), as Megatron uses.
pub fn gelu(x: f64) -> f64 {
    0.5 * x * (1.0 + (0.797_884_560_802_865_4 * (x + 0.044715 * x * x * x)).tanh())
}

/// Softmax of `x` in place, stable.
pub fn softmax(x: &mut [f64]) {
    let m = x.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let s: f64 = x
        .iter_mut()
        .map(|v| {
            *v = (*v - m).exp();
            *v
        })
        .sum();
    x.iter_mut().for_each(|v| *v /= s);
}

/// Largest relative difference between `a` and `b` (absolute below 1).
pub fn max_rel_diff(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len(), "lengths differ");
    a.iter().zip(b).map(|(x, y)| (x - y).abs() / x.abs().max(y.abs()).max(1.0)).fold(0.0, f64::max)
}

/// `Err` naming `what` when `a` and `b` differ by more than `tol` relative.
pub fn check_close(what: &str, a: &[f64], b: &[f64], tol: f64) -> Result<f64, String> {
    let d = max_rel_diff(a, b);
    if d.is_nan() || d > tol {
        return Err(format!("{what}: distributed and serial results differ by {d:.3e} (tolerance {tol:.0e})"));
    }
    Ok(d)
}

/// Rows `[r·n/parts, (r+1)·n/parts)`: a near-even shard of `n` rows for part `r`.
pub fn shard(n: usize, parts: usize, r: usize) -> (usize, usize) {
    (n * r / parts, n * (r + 1) / parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matmuls_agree_with_each_other() {
        let mut g = Rng::new(1);
        let (m, k, n) = (3, 4, 5);
        let a = g.vec(m * k, 1.0);
        let b = g.vec(k * n, 1.0);
        let c = matmul(&a, &b, m, k, n);
        // c[1][2] by hand
        let want: f64 = (0..k).map(|p| a[k + p] * b[p * n + 2]).sum();
        assert!((c[n + 2] - want).abs() < 1e-12);
        // (aᵀ)ᵀ b == a b
        let at: Vec<f64> = (0..k).flat_map(|p| (0..m).map(move |i| (i, p))).map(|(i, p)| a[i * k + p]).collect();
        assert!(max_rel_diff(&matmul_tn(&at, &b, k, m, n), &c) < 1e-12);
        let bt: Vec<f64> = (0..n).flat_map(|j| (0..k).map(move |p| (p, j))).map(|(p, j)| b[p * n + j]).collect();
        assert!(max_rel_diff(&matmul_nt(&a, &bt, m, k, n), &c) < 1e-12);
    }

    #[test]
    fn softmax_sums_to_one_and_shards_cover() {
        let mut x = vec![1.0, 2.0, 3.0, 1000.0];
        softmax(&mut x);
        assert!((x.iter().sum::<f64>() - 1.0).abs() < 1e-12 && x[3] > 0.99);
        let covered: usize = (0..3).map(|r| shard(10, 3, r)).map(|(a, b)| b - a).sum();
        assert_eq!(covered, 10);
        assert_eq!(columns(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 2, 3, 1, 3), vec![2.0, 3.0, 5.0, 6.0]);
        assert!(gelu(0.0) == 0.0 && (gelu(3.0) - 2.9964).abs() < 1e-3);
        assert!(check_close("x", &[1.0], &[1.1], 1e-5).is_err());
    }
}
