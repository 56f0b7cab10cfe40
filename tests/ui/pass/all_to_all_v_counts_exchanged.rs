// Counts that are data, exchanged before the payload (a shuffle by key): what rank i
// sends rank j is traced to what j received from i by the counts' `all_to_all`, also
// where both sides scale the counts (two words an item, written `2 * c` on one side
// and `c * 2` on the other). No warning: the pattern is proven.
#![deny(deprecated)]
use dist_runtime::prelude::*;
use std::hash::BuildHasher;

fn local_keys(rank: usize) -> Vec<u64> {
    let s = std::collections::hash_map::RandomState::new();
    (0..50 + 7 * rank).map(|i| s.hash_one((rank, i))).collect()
}

#[spmd(sizes = 1..=8)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let n = world.size();
    let keys = local_keys(world.rank());
    let mut buckets = vec![Vec::new(); n];
    for k in &keys {
        buckets[(k % n as u64) as usize].push(*k);
    }
    let send_counts: Vec<usize> = buckets.iter().map(Vec::len).collect();
    let counts64: Vec<u64> = send_counts.iter().map(|&c| c as u64).collect();
    let mut got = vec![0u64; n];
    world.all_to_all(&counts64, &mut got)?;
    let recv_counts: Vec<usize> = got.iter().map(|&c| c as usize).collect();
    let send: Vec<u64> = buckets.concat();
    let mut recv = vec![0u64; recv_counts.iter().sum()];
    world.all_to_all_v(&send, &send_counts, &mut recv, &recv_counts)?;
    // (key, 1) pairs: two words an item on both sides.
    let pairs: Vec<u64> = send.iter().flat_map(|&k| [k, 1]).collect();
    let send2: Vec<usize> = send_counts.iter().map(|&c| 2 * c).collect();
    let recv2: Vec<usize> = recv_counts.iter().map(|&c| c * 2).collect();
    let mut back = vec![0u64; recv2.iter().sum()];
    world.all_to_all_v(&pairs, &send2, &mut back, &recv2)?;
    assert_eq!(back.len(), 2 * recv.len());
    Ok(())
}
