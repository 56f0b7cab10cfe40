//! The deterministic operation streams and the key → owner map.

use crate::config::Config;

/// Knuth's MMIX linear congruential generator.
pub struct Lcg(u64);

impl Lcg {
    pub fn new(seed: u64) -> Lcg {
        // Scramble the seed (SplitMix64's finaliser): seeds that differ only in high
        // bits would otherwise give the same low bits for a long time.
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Lcg(z ^ (z >> 31))
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 17
    }
    pub fn below(&mut self, n: u64) -> u64 { self.next() % n }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    Put { key: String, value: u64 },
    Get { key: String },
    Delete { key: String },
}

impl Op {
    pub fn key(&self) -> &str {
        match self {
            Op::Put { key, .. } | Op::Get { key } | Op::Delete { key } => key,
        }
    }
}

/// 64-bit FNV-1a.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

pub fn owner(key: &str, ranks: usize) -> usize { (fnv1a(key.as_bytes()) % ranks as u64) as usize }

const TABLES: [&str; 4] = ["user", "session", "cart", "order"];

fn key_name(id: u64) -> String { format!("{}:{:04}", TABLES[(id % 4) as usize], id * 7919 % 10007) }

/// The operations client `rank` issues in `round` (between 0 and `max_ops` of them).
pub fn generate(cfg: &Config, rank: usize, round: usize) -> Vec<Op> {
    let mut rng = Lcg::new(cfg.seed.wrapping_mul(1_000_003) ^ ((rank as u64) << 32) ^ round as u64);
    let count = rng.below(cfg.max_ops as u64 + 1) as usize;
    let (gets, puts) = cfg.mix.split();
    (0..count)
        .map(|_| {
            let key = key_name(rng.below(cfg.keys));
            let dice = rng.below(100);
            if dice < gets {
                Op::Get { key }
            } else if dice < gets + puts {
                Op::Put { key, value: rng.below(1 << 40) }
            } else {
                Op::Delete { key }
            }
        })
        .collect()
}
