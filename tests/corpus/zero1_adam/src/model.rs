//! A one-hidden-layer tanh MLP with a scalar output, parameters in one flat vector:
//! [w1 (F×H), b1 (H), w2 (H), b2 (1)].

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
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Mlp {
    pub features: usize,
    pub hidden: usize,
}

/// The synthetic data set: `rows` inputs and their targets.
pub struct Dataset {
    pub x: Vec<f64>,
    pub y: Vec<f64>,
    pub features: usize,
}

impl Dataset {
    pub fn synthetic(rows: usize, features: usize, seed: u64) -> Dataset {
        let mut g = Rng::new(seed);
        let x: Vec<f64> = (0..rows * features).map(|_| g.uniform()).collect();
        let y = x
            .chunks(features)
            .map(|r| (1.5 * r[0]).sin() + r.iter().skip(1).enumerate().map(|(j, v)| v * (j as f64 - 1.0) * 0.3).sum::<f64>())
            .collect();
        Dataset { x, y, features }
    }

    pub fn rows(&self) -> usize {
        self.y.len()
    }

    /// The rows `lo..hi` as a borrowed view.
    pub fn slice(&self, lo: usize, hi: usize) -> (&[f64], &[f64]) {
        (&self.x[lo * self.features..hi * self.features], &self.y[lo..hi])
    }
}

impl Mlp {
    pub fn num_params(&self) -> usize {
        self.features * self.hidden + 2 * self.hidden + 1
    }

    pub fn init(&self, seed: u64) -> Vec<f64> {
        let mut g = Rng::new(seed ^ 0xA5A5);
        let scale = 1.0 / (self.features as f64).sqrt();
        (0..self.num_params()).map(|_| g.uniform() * scale).collect()
    }

    /// Gradient of `sum over rows of (pred - y)^2 / total_rows` for the given rows,
    /// written into `grad` (len = num_params); returns the partial loss.
    pub fn loss_grad(&self, p: &[f64], x: &[f64], y: &[f64], total_rows: usize, grad: &mut [f64]) -> f64 {
        let (f, h) = (self.features, self.hidden);
        let (w1, rest) = p.split_at(f * h);
        let (b1, rest) = rest.split_at(h);
        let (w2, b2) = rest.split_at(h);
        grad.iter_mut().for_each(|g| *g = 0.0);
        let mut loss = 0.0;
        let scale = 1.0 / total_rows as f64;
        let mut hid = vec![0.0; h];
        for (row, &t) in x.chunks(f).zip(y) {
            for j in 0..h {
                let z: f64 = b1[j] + (0..f).map(|i| row[i] * w1[i * h + j]).sum::<f64>();
                hid[j] = z.tanh();
            }
            let pred = b2[0] + hid.iter().zip(w2).map(|(a, b)| a * b).sum::<f64>();
            let e = pred - t;
            loss += e * e * scale;
            let d = 2.0 * e * scale;
            for j in 0..h {
                let dz = d * w2[j] * (1.0 - hid[j] * hid[j]);
                for i in 0..f {
                    grad[i * h + j] += row[i] * dz;
                }
                grad[f * h + j] += dz;
                grad[f * h + h + j] += d * hid[j];
            }
            grad[f * h + 2 * h] += d;
        }
        loss
    }
}
