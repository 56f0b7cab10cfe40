//! Deterministic record generation and the order-independent checksum.

/// One variable-length record: a key and its payload words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub key: u32,
    pub payload: Vec<u32>,
}

impl Record {
    /// The rank that owns this record in a world of `size` ranks.
    pub fn owner(&self, size: usize) -> usize {
        self.key as usize % size
    }

    /// A hash of the whole record (key, length and payload).
    pub fn digest(&self) -> u64 {
        let mut h = mix(self.key as u64 ^ ((self.payload.len() as u64) << 32));
        for &w in &self.payload {
            h = mix(h ^ w as u64);
        }
        h
    }
}

/// splitmix64's finaliser.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A small deterministic generator (splitmix64).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64, stream: u64) -> Rng {
        Rng(mix(seed) ^ mix(stream.wrapping_add(0x5851_F42D_4C95_7F2D)))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.0)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// The records rank `rank` starts with.
pub fn generate(seed: u64, rank: usize, records: usize, max_len: usize) -> Vec<Record> {
    let mut rng = Rng::new(seed, rank as u64);
    let count = records + rng.below(records as u64 / 10 + 1) as usize;
    (0..count)
        .map(|_| {
            let key = rng.next_u64() as u32;
            let len = rng.below(max_len as u64 + 1) as usize;
            let payload = (0..len).map(|_| rng.next_u64() as u32).collect();
            Record { key, payload }
        })
        .collect()
}

/// Number of checksum lanes: a record's digest is added into lane `key % LANES`.
pub const LANES: usize = 1 << 16;

/// Per-lane wrapping sums of the records' digests (independent of their order).
pub fn lane_checksums(records: &[Record]) -> Vec<u64> {
    let mut lanes = vec![0u64; LANES];
    for r in records {
        let lane = r.key as usize % LANES;
        lanes[lane] = lanes[lane].wrapping_add(r.digest());
    }
    lanes
}

/// Folds the lanes into one number.
pub fn fold_lanes(lanes: &[u64]) -> u64 {
    lanes
        .iter()
        .enumerate()
        .fold(0u64, |acc, (i, &l)| acc.wrapping_add(mix(l ^ i as u64)))
}
