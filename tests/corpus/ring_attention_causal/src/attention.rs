//! Causal attention: the serial reference and the online-softmax accumulator.

/// Deterministic inputs in [-1, 1).
pub fn random(len: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..len)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect()
}

/// Causal multi-head attention over the whole sequence; tensors are `[seq][heads][dim]`.
pub fn serial(q: &[f64], k: &[f64], v: &[f64], seq: usize, heads: usize, dim: usize) -> Vec<f64> {
    let w = heads * dim;
    let scale = 1.0 / (dim as f64).sqrt();
    let mut out = vec![0.0; seq * w];
    for h in 0..heads {
        for i in 0..seq {
            let scores: Vec<f64> = (0..=i)
                .map(|j| (0..dim).map(|c| q[i * w + h * dim + c] * k[j * w + h * dim + c]).sum::<f64>() * scale)
                .collect();
            let m = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let z: f64 = scores.iter().map(|s| (s - m).exp()).sum();
            for (j, s) in scores.iter().enumerate() {
                let p = (s - m).exp() / z;
                for c in 0..dim {
                    out[i * w + h * dim + c] += p * v[j * w + h * dim + c];
                }
            }
        }
    }
    out
}

/// Running max, running sum and unnormalised output for each (query row, head).
pub struct Online {
    heads: usize,
    dim: usize,
    rows: usize,
    m: Vec<f64>,
    s: Vec<f64>,
    acc: Vec<f64>,
}

impl Online {
    pub fn new(rows: usize, heads: usize, dim: usize) -> Online {
        Online {
            heads,
            dim,
            rows,
            m: vec![f64::NEG_INFINITY; rows * heads],
            s: vec![0.0; rows * heads],
            acc: vec![0.0; rows * heads * dim],
        }
    }

    /// Attends the queries `q` (global rows from `q0`) to `k_rows` keys/values starting
    /// at global row `k0`; `kv` is a packed message whose V half starts at `half`.
    /// Keys after a query (causal mask) are left out.
    pub fn update(&mut self, q: &[f64], q0: usize, kv: &[f64], half: usize, k0: usize, k_rows: usize) {
        let (heads, dim) = (self.heads, self.dim);
        let w = heads * dim;
        let scale = 1.0 / (dim as f64).sqrt();
        for i in 0..self.rows {
            let visible = (q0 + i + 1).saturating_sub(k0).min(k_rows);
            if visible == 0 {
                continue;
            }
            for h in 0..heads {
                let scores: Vec<f64> = (0..visible)
                    .map(|j| (0..dim).map(|c| q[i * w + h * dim + c] * kv[j * w + h * dim + c]).sum::<f64>() * scale)
                    .collect();
                let idx = i * heads + h;
                let new_m = scores.iter().cloned().fold(self.m[idx], f64::max);
                let keep = (self.m[idx] - new_m).exp();
                self.s[idx] *= keep;
                for c in 0..dim {
                    self.acc[idx * dim + c] *= keep;
                }
                for (j, sc) in scores.iter().enumerate() {
                    let p = (sc - new_m).exp();
                    self.s[idx] += p;
                    for c in 0..dim {
                        self.acc[idx * dim + c] += p * kv[half + j * w + h * dim + c];
                    }
                }
                self.m[idx] = new_m;
            }
        }
    }

    /// The normalised output rows.
    pub fn finish(&self) -> Vec<f64> {
        (0..self.acc.len()).map(|x| self.acc[x] / self.s[x / self.dim]).collect()
    }
}
