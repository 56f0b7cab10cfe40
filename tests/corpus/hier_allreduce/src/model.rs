//! A one-hidden-layer MLP (tanh) with a flat parameter vector, and the synthetic data.

pub const INPUTS: usize = 4;

/// splitmix64: a tiny seeded generator, good enough for synthetic data.
pub fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn unit(seed: u64, k: u64) -> f64 {
    // uniform in [-1, 1)
    (mix(seed ^ mix(k)) >> 11) as f64 / (1u64 << 52) as f64 - 1.0
}

/// Sample `index` of the endless synthetic stream: inputs and target.
pub fn sample(seed: u64, index: u64) -> ([f64; INPUTS], f64) {
    let mut x = [0.0; INPUTS];
    for (j, v) in x.iter_mut().enumerate() {
        *v = unit(seed, index * INPUTS as u64 + j as u64);
    }
    let y = x[0].sin() + 0.5 * x[1] * x[2] - x[3];
    (x, y)
}

#[derive(Clone, Debug)]
pub struct Mlp {
    pub hidden: usize,
    pub params: Vec<f64>,
}

impl Mlp {
    pub fn new(hidden: usize, seed: u64) -> Mlp {
        let n = hidden * INPUTS + hidden + hidden + 1;
        let params = (0..n as u64).map(|k| 0.5 * unit(seed.wrapping_add(1), 1_000_000 + k)).collect();
        Mlp { hidden, params }
    }

    pub fn n_params(&self) -> usize {
        self.params.len()
    }

    fn split(&self) -> (&[f64], &[f64], &[f64], f64) {
        let h = self.hidden;
        let (w1, rest) = self.params.split_at(h * INPUTS);
        let (b1, rest) = rest.split_at(h);
        let (w2, b2) = rest.split_at(h);
        (w1, b1, w2, b2[0])
    }

    /// Adds the gradient of 0.5·(f(x) − y)² to `grad` and returns the loss.
    pub fn accumulate(&self, x: &[f64; INPUTS], y: f64, grad: &mut [f64]) -> f64 {
        let h = self.hidden;
        let (w1, b1, w2, b2) = self.split();
        let act: Vec<f64> = (0..h)
            .map(|j| (b1[j] + (0..INPUTS).map(|i| w1[j * INPUTS + i] * x[i]).sum::<f64>()).tanh())
            .collect();
        let pred = b2 + act.iter().zip(w2).map(|(a, w)| a * w).sum::<f64>();
        let d = pred - y;
        let (g_w1, rest) = grad.split_at_mut(h * INPUTS);
        let (g_b1, rest) = rest.split_at_mut(h);
        let (g_w2, g_b2) = rest.split_at_mut(h);
        g_b2[0] += d;
        for j in 0..h {
            g_w2[j] += d * act[j];
            let da = d * w2[j] * (1.0 - act[j] * act[j]);
            g_b1[j] += da;
            for i in 0..INPUTS {
                g_w1[j * INPUTS + i] += da * x[i];
            }
        }
        0.5 * d * d
    }

    pub fn apply(&mut self, grad_sum: &[f64], count: usize, lr: f64) {
        let scale = lr / count as f64;
        for (p, g) in self.params.iter_mut().zip(grad_sum) {
            *p -= scale * g;
        }
    }
}

/// Which global samples a rank sees: micro-batch `m` of step `s` on rank `r` of `world`.
pub fn sample_indices(s: usize, m: usize, accum: usize, r: usize, world: usize, micro: usize) -> impl Iterator<Item = u64> {
    let base = ((s * accum + m) * world + r) * micro;
    (base..base + micro).map(|i| i as u64)
}
