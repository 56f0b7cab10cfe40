//! The whole job in one process: every rank's records, aggregated per key.

use crate::config::Config;
use crate::records::{add, generate, Agg};
use std::collections::BTreeMap;

pub struct Expected {
    pub per_key: BTreeMap<u64, Agg>,
    pub records: u64,
    pub sum: u64,
    pub max: u64,
}

pub fn compute(cfg: &Config, n: usize) -> Expected {
    let mut per_key: BTreeMap<u64, Agg> = BTreeMap::new();
    for rank in 0..n {
        for r in generate(cfg, rank) {
            add(per_key.entry(r.key).or_insert((0, 0, 0)), r.value);
        }
    }
    let records = per_key.values().map(|a| a.0).sum();
    let sum = per_key.values().map(|a| a.1).sum();
    let max = per_key.values().map(|a| a.2).max().unwrap_or(0);
    Expected { per_key, records, sum, max }
}
