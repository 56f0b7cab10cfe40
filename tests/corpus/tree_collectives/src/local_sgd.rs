//! Each rank's private data and the local SGD it runs between averaging rounds
//! (linear least squares, plain loops).

pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x5DEE_CE66_D1A4_F87B)
    }
    pub fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }
}

pub struct Shard {
    pub dim: usize,
    pub x: Vec<f64>,
    pub y: Vec<f64>,
}

/// Rank `rank`'s rows: every rank sees a shifted input distribution (non-IID), the
/// targets come from one shared true model.
pub fn make_shard(rank: usize, rows: usize, dim: usize, seed: u64) -> Shard {
    let truth: Vec<f64> = (0..dim).map(|j| ((j % 5) as f64 - 2.0) * 0.5).collect();
    let mut rng = Rng::new(seed * 1_000_003 + rank as u64 + 1);
    let shift = rank as f64 * 0.1;
    let x: Vec<f64> = (0..rows * dim).map(|_| rng.uniform() + shift).collect();
    let y = x.chunks(dim).map(|row| row.iter().zip(&truth).map(|(a, b)| a * b).sum::<f64>() + 0.01 * rng.uniform()).collect();
    Shard { dim, x, y }
}

pub fn init_params(dim: usize, seed: u64) -> Vec<f64> {
    let mut rng = Rng::new(seed);
    (0..dim).map(|_| rng.uniform()).collect()
}

/// Mean squared error of `w` on the shard.
pub fn loss(w: &[f64], s: &Shard) -> f64 {
    let rows = s.y.len();
    s.x.chunks(s.dim).zip(&s.y).map(|(row, y)| (row.iter().zip(w).map(|(a, b)| a * b).sum::<f64>() - y).powi(2)).sum::<f64>()
        / rows.max(1) as f64
}

/// `steps` full-batch gradient steps on the shard; returns the loss before them.
pub fn local_steps(w: &mut [f64], s: &Shard, steps: usize, lr: f64) -> f64 {
    let before = loss(w, s);
    let rows = s.y.len().max(1) as f64;
    for _ in 0..steps {
        let mut grad = vec![0.0; s.dim];
        for (row, y) in s.x.chunks(s.dim).zip(&s.y) {
            let err = row.iter().zip(w.iter()).map(|(a, b)| a * b).sum::<f64>() - y;
            grad.iter_mut().zip(row).for_each(|(g, a)| *g += 2.0 * err * a / rows);
        }
        w.iter_mut().zip(&grad).for_each(|(w, g)| *w -= lr * g);
    }
    before
}
