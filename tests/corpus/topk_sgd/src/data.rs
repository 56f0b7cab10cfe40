//! Each rank's shard of a linear-regression problem, generated from the rank's seed.

pub const DIM: usize = 24;
pub const ROWS: usize = 8;

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
}

pub struct Shard {
    pub x: Vec<f32>,
    pub y: Vec<f32>,
}

impl Shard {
    pub fn generate(rank: usize) -> Shard {
        let mut truth = Rng::new(42);
        let w_true: Vec<f32> = (0..DIM).map(|_| truth.uniform()).collect();
        let mut g = Rng::new(1000 + rank as u64);
        // Some columns are zero on some ranks, so the gradients are sparse and differ.
        let x: Vec<f32> = (0..ROWS * DIM)
            .map(|i| if (i % DIM) % (rank % 3 + 2) == 0 { 0.0 } else { g.uniform() })
            .collect();
        let y = (0..ROWS).map(|i| (0..DIM).map(|j| x[i * DIM + j] * w_true[j]).sum::<f32>() + 0.01 * g.uniform()).collect();
        Shard { x, y }
    }

    pub fn loss(&self, w: &[f32]) -> f32 {
        (0..ROWS)
            .map(|i| {
                let r = (0..DIM).map(|j| self.x[i * DIM + j] * w[j]).sum::<f32>() - self.y[i];
                0.5 * r * r
            })
            .sum::<f32>()
            / ROWS as f32
    }

    pub fn gradient(&self, w: &[f32]) -> Vec<f32> {
        let mut g = vec![0.0f32; DIM];
        for i in 0..ROWS {
            let r = (0..DIM).map(|j| self.x[i * DIM + j] * w[j]).sum::<f32>() - self.y[i];
            for j in 0..DIM {
                g[j] += r * self.x[i * DIM + j] / ROWS as f32;
            }
        }
        g
    }
}

pub fn initial_weights() -> Vec<f32> {
    let mut g = Rng::new(5);
    (0..DIM).map(|_| 0.1 * g.uniform()).collect()
}
