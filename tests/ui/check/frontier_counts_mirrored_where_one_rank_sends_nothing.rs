// A BFS frontier exchange with the receive counts taken to mirror the send counts. On
// the first level only the source's owner has a frontier: the other ranks send exactly
// nothing, but what they expect from the owner is their own (zero) count, while the
// owner sends its neighbours' count, data computed from its part of the graph.
use dist_runtime::prelude::*;
use std::hash::BuildHasher;

fn neighbours(v: u64) -> Vec<u64> {
    let s = std::collections::hash_map::RandomState::new();
    (0..3).map(|i| s.hash_one((v, i)) % 100).collect()
}

#[spmd(sizes = 1..=4)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let n = world.size();
    let frontier: Vec<u64> = if world.rank() == 0 { vec![0] } else { Vec::new() };
    let mut outgoing: Vec<Vec<u64>> = vec![Vec::new(); n];
    frontier.iter().flat_map(|&v| neighbours(v)).for_each(|u| outgoing[u as usize % n].push(u));
    let send_counts: Vec<usize> = outgoing.iter().map(Vec::len).collect();
    // "the graph is undirected": what rank j sends us is what we send rank j
    let recv_counts = send_counts.clone();
    let send: Vec<u64> = outgoing.concat();
    let mut recv = vec![0u64; recv_counts.iter().sum()];
    world.all_to_all_v(&send, &send_counts, &mut recv, &recv_counts)?;
    Ok(())
}
