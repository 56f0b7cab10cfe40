//! Column-oriented row sets and the synthetic input tables.

/// A set of rows: a key column and any number of u64 payload columns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rows {
    pub keys: Vec<u64>,
    pub cols: Vec<Vec<u64>>,
}

impl Rows {
    pub fn with_columns(ncols: usize) -> Rows {
        Rows { keys: Vec::new(), cols: vec![Vec::new(); ncols] }
    }
    pub fn len(&self) -> usize {
        self.keys.len()
    }
    pub fn push(&mut self, key: u64, vals: &[u64]) {
        self.keys.push(key);
        for (c, v) in self.cols.iter_mut().zip(vals) {
            c.push(*v);
        }
    }
    pub fn row(&self, i: usize) -> (u64, Vec<u64>) {
        (self.keys[i], self.cols.iter().map(|c| c[i]).collect())
    }
}

/// splitmix64 finaliser: the partitioning hash.
pub fn hash(key: u64) -> u64 {
    let mut z = key.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Which of `n` partitions a key belongs to.
pub fn owner(key: u64, n: usize) -> usize {
    (hash(key) % n as u64) as usize
}

fn rng_stream(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed;
    move || {
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        hash(s)
    }
}

/// Rank `rank`'s part of table `name` ('R' or 'S'): `rows` rows (a few more on odd
/// ranks) of (key, payload). S's keys are skewed towards small values.
pub fn generate(name: char, rows: usize, key_range: u64, seed: u64, rank: usize) -> Rows {
    let mut next = rng_stream(seed ^ ((name as u64) << 40) ^ (rank as u64) << 20);
    let count = rows + (rank % 2) * (rows / 5);
    let mut t = Rows::with_columns(1);
    for i in 0..count {
        let r = next();
        let key = if name == 'S' && r % 3 == 0 { r % (key_range / 10 + 1) } else { r % key_range };
        let payload = (rank as u64) << 32 | i as u64;
        t.push(key, &[payload]);
    }
    t
}
