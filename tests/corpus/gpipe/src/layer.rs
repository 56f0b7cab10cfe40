//! One dense layer, y = act(W x + b), on row-major batches.

fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Reproducible value in [-1, 1).
pub fn noise(seed: u64, a: u64, b: u64) -> f64 {
    let h = mix(seed ^ mix(a ^ mix(b.wrapping_add(0x51))));
    (h >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
}

#[derive(Clone, Debug)]
pub struct Layer {
    pub d_in: usize,
    pub d_out: usize,
    pub w: Vec<f64>,
    pub b: Vec<f64>,
    /// tanh after the affine map (every layer but the last).
    pub tanh: bool,
}

impl Layer {
    pub fn init(seed: u64, index: usize, d_in: usize, d_out: usize, tanh: bool) -> Layer {
        let scale = 1.0 / (d_in as f64).sqrt();
        let w = (0..d_in * d_out).map(|k| scale * noise(seed, index as u64, k as u64)).collect();
        let b = (0..d_out).map(|k| 0.1 * noise(seed ^ 0xb1a5, index as u64, k as u64)).collect();
        Layer { d_in, d_out, w, b, tanh }
    }

    pub fn forward(&self, x: &[f64]) -> Vec<f64> {
        x.chunks(self.d_in)
            .flat_map(|row| {
                (0..self.d_out).map(move |o| {
                    let z = self.b[o] + self.w[o * self.d_in..(o + 1) * self.d_in].iter().zip(row).map(|(w, x)| w * x).sum::<f64>();
                    if self.tanh {
                        z.tanh()
                    } else {
                        z
                    }
                })
            })
            .collect()
    }

    /// Given input `x`, output `y` and the loss gradient `dy` wrt `y`, adds the weight
    /// gradients to `gw`/`gb` and returns the gradient wrt `x`.
    pub fn backward(&self, x: &[f64], y: &[f64], dy: &[f64], gw: &mut [f64], gb: &mut [f64]) -> Vec<f64> {
        let mut dx = vec![0.0; x.len()];
        for ((xr, yr), (dyr, dxr)) in x.chunks(self.d_in).zip(y.chunks(self.d_out)).zip(dy.chunks(self.d_out).zip(dx.chunks_mut(self.d_in))) {
            for o in 0..self.d_out {
                let dz = if self.tanh { dyr[o] * (1.0 - yr[o] * yr[o]) } else { dyr[o] };
                gb[o] += dz;
                let wrow = &self.w[o * self.d_in..(o + 1) * self.d_in];
                for i in 0..self.d_in {
                    gw[o * self.d_in + i] += dz * xr[i];
                    dxr[i] += dz * wrow[i];
                }
            }
        }
        dx
    }

    pub fn grad_sq_norm(gw: &[f64], gb: &[f64]) -> f64 {
        gw.iter().chain(gb).map(|g| g * g).sum()
    }

    pub fn sgd(&mut self, gw: &[f64], gb: &[f64], lr: f64) {
        self.w.iter_mut().zip(gw).for_each(|(w, g)| *w -= lr * g);
        self.b.iter_mut().zip(gb).for_each(|(b, g)| *b -= lr * g);
    }
}

/// Half the squared error per sample, averaged over `total` samples: (loss sum, dy).
pub fn mse(y: &[f64], t: &[f64], total: usize) -> (f64, Vec<f64>) {
    let loss = y.iter().zip(t).map(|(a, b)| 0.5 * (a - b) * (a - b)).sum::<f64>() / total as f64;
    let dy = y.iter().zip(t).map(|(a, b)| (a - b) / total as f64).collect();
    (loss, dy)
}
