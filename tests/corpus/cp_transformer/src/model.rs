//! A one-head linear-attention layer: q = x·Wq, k = x·Wk, v = x·Wv,
//! S = (1/L) Σ_j k_jᵀ v_j, out_i = q_i · S, loss = mean squared error against y.
//! Row-major `Vec<f64>` throughout; parameters are [Wq | Wk | Wv], each d×d.

pub fn n_params(d: usize) -> usize {
    3 * d * d
}

fn uniform(mut z: u64) -> f64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
}

pub fn init_params(d: usize, seed: u64, scale: f64) -> Vec<f64> {
    (0..n_params(d)).map(|i| scale * uniform(seed.wrapping_mul(7919) ^ i as u64)).collect()
}

/// `a` (rows×d) · `w` (d×e).
pub fn matmul(a: &[f64], w: &[f64], rows: usize, d: usize, e: usize) -> Vec<f64> {
    let mut out = vec![0.0; rows * e];
    for i in 0..rows {
        for b in 0..d {
            (0..e).for_each(|c| out[i * e + c] += a[i * d + b] * w[b * e + c]);
        }
    }
    out
}

/// `aᵀ` (d×rows) · `b` (rows×e).
pub fn matmul_tn(a: &[f64], b: &[f64], rows: usize, d: usize, e: usize) -> Vec<f64> {
    let mut out = vec![0.0; d * e];
    for i in 0..rows {
        for x in 0..d {
            (0..e).for_each(|c| out[x * e + c] += a[i * d + x] * b[i * e + c]);
        }
    }
    out
}

/// Elementwise sum of `parts` in order (the order an all_reduce folds ranks in).
pub fn fold_sum(parts: &[Vec<f64>], len: usize) -> Vec<f64> {
    (0..len).map(|e| parts.iter().fold(0.0, |acc, p| acc + p[e])).collect()
}

/// A sequence (l×d) and its targets from a fixed teacher layer, plus a little noise.
pub fn sequence(seed: u64, step: u64, replica: usize, l: usize, d: usize) -> (Vec<f64>, Vec<f64>) {
    let base = seed ^ (step << 20) ^ (replica as u64) << 8;
    let x: Vec<f64> = (0..l * d).map(|i| uniform(base ^ (i as u64) << 32)).collect();
    let t = init_params(d, 4242, 1.2);
    let (q, k, v) = (matmul(&x, &t[..d * d], l, d, d), matmul(&x, &t[d * d..2 * d * d], l, d, d), matmul(&x, &t[2 * d * d..], l, d, d));
    let s: Vec<f64> = matmul_tn(&k, &v, l, d, d).iter().map(|z| z / l as f64).collect();
    let y = matmul(&q, &s, l, d, d).iter().enumerate().map(|(i, t)| t + 0.01 * uniform(!base ^ i as u64)).collect();
    (x, y)
}

/// Σ kᵀv over one block of rows of x.
pub fn block_kv(theta: &[f64], x: &[f64], rows: usize, d: usize) -> Vec<f64> {
    matmul_tn(&matmul(x, &theta[d * d..2 * d * d], rows, d, d), &matmul(x, &theta[2 * d * d..], rows, d, d), rows, d, d)
}

/// Forward on one block: (sum of squared errors, dLoss/dout for these rows, q).
pub fn block_forward(theta: &[f64], x: &[f64], y: &[f64], s: &[f64], rows: usize, d: usize, l: usize) -> (f64, Vec<f64>, Vec<f64>) {
    let q = matmul(x, &theta[..d * d], rows, d, d);
    let out = matmul(&q, s, rows, d, d);
    let sse = out.iter().zip(y).map(|(o, t)| (o - t) * (o - t)).sum();
    let g = out.iter().zip(y).map(|(o, t)| 2.0 * (o - t) / (l * d) as f64).collect();
    (sse, g, q)
}

/// This block's part of the gradient of [Wq | Wk | Wv], given the full-sequence S and
/// G = Σ_i q_iᵀ g_i.
#[allow(clippy::too_many_arguments)]
pub fn weight_grads(theta: &[f64], x: &[f64], g: &[f64], s: &[f64], big_g: &[f64], rows: usize, d: usize, l: usize) -> Vec<f64> {
    let (k, v) = (matmul(x, &theta[d * d..2 * d * d], rows, d, d), matmul(x, &theta[2 * d * d..], rows, d, d));
    let t = |m: &[f64]| (0..d * d).map(|i| m[(i % d) * d + i / d]).collect::<Vec<f64>>();
    let dq = matmul(g, &t(s), rows, d, d);
    let dk: Vec<f64> = matmul(&v, &t(big_g), rows, d, d).iter().map(|t| t / l as f64).collect();
    let dv: Vec<f64> = matmul(&k, big_g, rows, d, d).iter().map(|t| t / l as f64).collect();
    [matmul_tn(x, &dq, rows, d, d), matmul_tn(x, &dk, rows, d, d), matmul_tn(x, &dv, rows, d, d)].concat()
}
