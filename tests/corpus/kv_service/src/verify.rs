//! The same workload applied to one `HashMap`: what every rank should have seen.

use std::collections::HashMap;

use crate::workload::{checksum, gets_of, owner, puts_of, Options};

pub struct Expected {
    /// Per rank: checksum of (key, value) over its lookups, and of the part of the store it owns.
    pub client_sums: Vec<u64>,
    pub store_sums: Vec<u64>,
    pub distinct_keys: u64,
}

pub fn serial(o: &Options, ranks: usize) -> Expected {
    let mut map: HashMap<u64, u64> = HashMap::new();
    for r in 0..ranks {
        for (k, v) in puts_of(r, o) {
            let slot = map.entry(k).or_insert(0);
            *slot = slot.wrapping_add(v);
        }
    }
    let client_sums = (0..ranks)
        .map(|r| {
            let got: Vec<(u64, u64)> = gets_of(r, o).into_iter().map(|k| (k, map.get(&k).copied().unwrap_or(0))).collect();
            checksum(got.iter().map(|(k, v)| (k, v)))
        })
        .collect();
    let store_sums = (0..ranks).map(|r| checksum(map.iter().filter(|(k, _)| owner(**k, ranks) == r))).collect();
    Expected { client_sums, store_sums, distinct_keys: map.len() as u64 }
}
