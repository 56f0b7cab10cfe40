//! The shuffle: records routed to their key's owner by all_to_all (counts) and
//! all_to_all_v (keys and values), then aggregated per key.

use crate::records::{add, owner, Agg, Record};
use dist_runtime::prelude::*;
use std::collections::BTreeMap;

/// Sends each record to its owner; returns the records this rank owns.
pub fn exchange(world: &Comm<World>, records: &[Record]) -> dist_runtime::Result<Vec<Record>> {
    let n = world.size();
    let mut buckets: Vec<Vec<Record>> = vec![Vec::new(); n];
    for r in records {
        buckets[owner(r.key, n)].push(*r);
    }
    let send_counts: Vec<u64> = buckets.iter().map(|b| b.len() as u64).collect();
    let mut recv_counts = vec![0u64; n];
    world.all_to_all(&send_counts, &mut recv_counts)?;

    let send_keys: Vec<u64> = buckets.iter().flatten().map(|r| r.key).collect();
    let send_vals: Vec<u64> = buckets.iter().flatten().map(|r| r.value).collect();
    let sc: Vec<usize> = send_counts.iter().map(|&c| c as usize).collect();
    let rc: Vec<usize> = recv_counts.iter().map(|&c| c as usize).collect();
    let total: usize = rc.iter().sum();
    let mut keys = vec![0u64; total];
    let mut vals = vec![0u64; total];
    world.all_to_all_v(&send_keys, &sc, &mut keys, &rc)?;
    world.all_to_all_v(&send_vals, &sc, &mut vals, &rc)?;
    Ok(keys.into_iter().zip(vals).map(|(key, value)| Record { key, value }).collect())
}

pub fn aggregate(records: &[Record]) -> BTreeMap<u64, Agg> {
    let mut by_key: BTreeMap<u64, Agg> = BTreeMap::new();
    for r in records {
        add(by_key.entry(r.key).or_insert((0, 0, 0)), r.value);
    }
    by_key
}
