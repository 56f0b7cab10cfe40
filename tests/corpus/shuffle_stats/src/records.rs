//! Records generated per rank from a seed, and the key → owner hash.

use crate::config::Config;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Record {
    pub key: u64,
    pub value: u64,
}

fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

pub fn generate(cfg: &Config, rank: usize) -> Vec<Record> {
    let mut state = cfg.seed * 1_000_003 + rank as u64;
    // Ranks hold different numbers of records.
    let count = cfg.records + (rank * 7) % 5;
    (0..count)
        .map(|_| {
            state = mix(state);
            let key = state % cfg.keys;
            state = mix(state);
            Record { key, value: state % 100 }
        })
        .collect()
}

/// The rank that aggregates `key`.
pub fn owner(key: u64, n: usize) -> usize {
    (mix(key ^ 0xABCD) % n as u64) as usize
}

/// Per-key aggregate: (count, sum, max).
pub type Agg = (u64, u64, u64);

pub fn add(agg: &mut Agg, value: u64) {
    agg.0 += 1;
    agg.1 += value;
    agg.2 = agg.2.max(value);
}
