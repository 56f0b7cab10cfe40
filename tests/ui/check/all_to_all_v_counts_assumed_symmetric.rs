// Receive counts taken to mirror the send counts: what rank j expects from rank i is
// then what j sends i, computed from j's keys, while i sends what its own keys give.
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
    let recv_counts = send_counts.clone();
    let send: Vec<u64> = buckets.concat();
    let mut recv = vec![0u64; recv_counts.iter().sum()];
    world.all_to_all_v(&send, &send_counts, &mut recv, &recv_counts)?;
    Ok(())
}
