//! Small dense linear algebra on row-major `f64` matrices: Householder QR (R factor
//! only), stacking of R factors, triangular solves, and a Cholesky solve of the normal
//! equations for the serial reference.

/// The `c x c` upper-triangular R of the QR factorisation of the row-major `n x c`
/// matrix `a`, by Householder reflections. When `n < c` the rows of R past `n` are zero.
pub fn householder_r(a: &[f64], n: usize, c: usize) -> Vec<f64> {
    assert_eq!(a.len(), n * c, "matrix is not {n} x {c}");
    let mut m = a.to_vec();
    let mut v = vec![0.0; n];
    for j in 0..n.min(c) {
        // Householder vector for column j, rows j..n.
        let norm = (j..n).map(|i| m[i * c + j] * m[i * c + j]).sum::<f64>().sqrt();
        if norm == 0.0 {
            continue;
        }
        let alpha = if m[j * c + j] > 0.0 { -norm } else { norm };
        for i in j..n {
            v[i] = m[i * c + j];
        }
        v[j] -= alpha;
        let vv: f64 = (j..n).map(|i| v[i] * v[i]).sum();
        if vv == 0.0 {
            continue;
        }
        // Apply H = I - 2 v v^T / (v^T v) to columns j..c.
        for col in j..c {
            let dot: f64 = (j..n).map(|i| v[i] * m[i * c + col]).sum();
            let f = 2.0 * dot / vv;
            for i in j..n {
                m[i * c + col] -= f * v[i];
            }
        }
        // Column j is now alpha e_j exactly; clean the rounding below the diagonal.
        m[j * c + j] = alpha;
        for i in j + 1..n {
            m[i * c + j] = 0.0;
        }
    }
    let mut r = vec![0.0; c * c];
    for i in 0..n.min(c) {
        for j in i..c {
            r[i * c + j] = m[i * c + j];
        }
    }
    r
}

/// R of the stacked pair [r1; r2] of `c x c` factors: the TSQR combine step.
pub fn combine_r(r1: &[f64], r2: &[f64], c: usize) -> Vec<f64> {
    let mut stacked = Vec::with_capacity(2 * c * c);
    stacked.extend_from_slice(r1);
    stacked.extend_from_slice(r2);
    householder_r(&stacked, 2 * c, c)
}

/// Solve the upper-triangular system U x = y, where U is the leading `k x k` block of a
/// row-major matrix with row stride `stride`.
pub fn back_substitute(u: &[f64], stride: usize, k: usize, y: &[f64]) -> Result<Vec<f64>, String> {
    let mut x = vec![0.0; k];
    let scale = (0..k).map(|i| u[i * stride + i].abs()).fold(0.0, f64::max);
    for i in (0..k).rev() {
        let d = u[i * stride + i];
        if d.abs() <= 1e-13 * scale.max(1.0) {
            return Err(format!("R is singular: R[{i}][{i}] = {d:e}"));
        }
        let s: f64 = (i + 1..k).map(|j| u[i * stride + j] * x[j]).sum();
        x[i] = (y[i] - s) / d;
    }
    Ok(x)
}

/// Least squares through the normal equations (A^T A) x = A^T b, by Cholesky. `ab` is
/// the row-major augmented matrix [A | b] with `k + 1` columns.
pub fn normal_equations(ab: &[f64], k: usize) -> Result<Vec<f64>, String> {
    let w = k + 1;
    let mut g = vec![0.0; k * k];
    let mut rhs = vec![0.0; k];
    for row in ab.chunks_exact(w) {
        for i in 0..k {
            rhs[i] += row[i] * row[k];
            for j in 0..=i {
                g[i * k + j] += row[i] * row[j];
            }
        }
    }
    // In-place Cholesky: lower triangle of g becomes L with G = L L^T.
    for j in 0..k {
        let d = g[j * k + j] - (0..j).map(|p| g[j * k + p] * g[j * k + p]).sum::<f64>();
        if d <= 0.0 {
            return Err(format!("A^T A is not positive definite (pivot {j}: {d:e})"));
        }
        let d = d.sqrt();
        g[j * k + j] = d;
        for i in j + 1..k {
            let s = g[i * k + j] - (0..j).map(|p| g[i * k + p] * g[j * k + p]).sum::<f64>();
            g[i * k + j] = s / d;
        }
    }
    // L z = rhs, then L^T x = z.
    let mut z = vec![0.0; k];
    for i in 0..k {
        let s: f64 = (0..i).map(|p| g[i * k + p] * z[p]).sum();
        z[i] = (rhs[i] - s) / g[i * k + i];
    }
    let mut x = vec![0.0; k];
    for i in (0..k).rev() {
        let s: f64 = (i + 1..k).map(|p| g[p * k + i] * x[p]).sum();
        x[i] = (z[i] - s) / g[i * k + i];
    }
    Ok(x)
}

/// Sum of squares of A x - b over the rows of the augmented block `ab`.
pub fn residual_sq(ab: &[f64], k: usize, x: &[f64]) -> f64 {
    ab.chunks_exact(k + 1)
        .map(|row| {
            let ax: f64 = row[..k].iter().zip(x).map(|(a, xi)| a * xi).sum();
            (ax - row[k]).powi(2)
        })
        .sum()
}

/// Largest |a_i - b_i| relative to the largest |b_i| (at least 1).
pub fn rel_diff(a: &[f64], b: &[f64]) -> f64 {
    let scale = b.iter().map(|v| v.abs()).fold(1.0, f64::max);
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max) / scale
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mat_t_mat(a: &[f64], n: usize, c: usize) -> Vec<f64> {
        let mut g = vec![0.0; c * c];
        for row in a.chunks_exact(c) {
            for i in 0..c {
                for j in 0..c {
                    g[i * c + j] += row[i] * row[j];
                }
            }
        }
        let _ = n;
        g
    }

    #[test]
    fn r_reproduces_gram_matrix() {
        let (n, c) = (7, 3);
        let a: Vec<f64> = (0..n * c).map(|i| ((i * 37 % 11) as f64) - 5.0).collect();
        let r = householder_r(&a, n, c);
        let g1 = mat_t_mat(&a, n, c);
        let g2 = mat_t_mat(&r, c, c);
        assert!(rel_diff(&g1, &g2) < 1e-12, "{g1:?} vs {g2:?}");
    }

    #[test]
    fn combine_equals_factor_of_stack() {
        let c = 3;
        let a: Vec<f64> = (0..10 * c).map(|i| ((i * 13 % 7) as f64) - 3.0 + i as f64 * 0.01).collect();
        let whole = householder_r(&a, 10, c);
        let top = householder_r(&a[..4 * c], 4, c);
        let bottom = householder_r(&a[4 * c..], 6, c);
        let both = combine_r(&top, &bottom, c);
        assert!(rel_diff(&mat_t_mat(&whole, c, c), &mat_t_mat(&both, c, c)) < 1e-12);
    }
}
