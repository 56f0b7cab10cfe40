//! Synthetic regression data and the block sharding of rows.

pub const INPUTS: usize = 5;

/// SplitMix64, so every rank draws the same numbers from the same seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x2545_F491_4F6C_DD1D))
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
        (self.next_u64() >> 11) as f64 / (1u64 << 52) as f64 * 2.0 - 1.0
    }
}

pub struct Dataset {
    pub x: Vec<f64>,
    pub y: Vec<f64>,
}

impl Dataset {
    pub fn generate(rows: usize, rng: &mut Rng) -> Dataset {
        let x: Vec<f64> = (0..rows * INPUTS).map(|_| rng.uniform()).collect();
        let y = x
            .chunks(INPUTS)
            .map(|r| (1.5 * r[0]).sin() + r[1] * r[2] - 0.5 * r[3] + 0.25 * r[4] * r[4] + 0.05 * rng.uniform())
            .collect();
        Dataset { x, y }
    }

    pub fn len(&self) -> usize {
        self.y.len()
    }

    pub fn rows(&self, lo: usize, hi: usize) -> (&[f64], &[f64]) {
        (&self.x[lo * INPUTS..hi * INPUTS], &self.y[lo..hi])
    }
}

pub struct Splits {
    pub train: Dataset,
    pub val: Dataset,
}

pub fn make_splits(train_rows: usize, val_rows: usize, seed: u64) -> Splits {
    let mut rng = Rng::new(seed);
    Splits { train: Dataset::generate(train_rows, &mut rng), val: Dataset::generate(val_rows, &mut rng) }
}

/// Rows `lo..hi` of `len` that part `idx` of `parts` owns (the first `len % parts` parts
/// get one more).
pub fn shard(len: usize, parts: usize, idx: usize) -> (usize, usize) {
    let (q, rem) = (len / parts, len % parts);
    let lo = idx * q + idx.min(rem);
    (lo, lo + q + usize::from(idx < rem))
}
