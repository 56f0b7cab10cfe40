//! The serial reference: every rank's records, regenerated in one process.

use crate::cli::Config;
use crate::records::{fold_lanes, generate, lane_checksums, Record};

pub struct Expected {
    pub count: u64,
    pub checksum: u64,
    pub per_rank: Vec<u64>,
}

pub fn expected(cfg: &Config, size: usize) -> Expected {
    let all: Vec<Record> = (0..size)
        .flat_map(|r| generate(cfg.seed, r, cfg.records, cfg.max_len))
        .collect();
    let mut per_rank = vec![0u64; size];
    for rec in &all {
        per_rank[rec.owner(size)] += 1;
    }
    Expected {
        count: all.len() as u64,
        checksum: fold_lanes(&lane_checksums(&all)),
        per_rank,
    }
}
