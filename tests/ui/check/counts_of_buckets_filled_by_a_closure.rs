// Buckets filled by `for_each` over keys that arrived from a broadcast (data), then
// the receive counts taken to mirror the send counts: the closure's pushes change
// the buckets' lengths, so the counts are data each rank computes for itself.
use dist_runtime::prelude::*;

fn bucket(n: usize, keys: &[u64]) -> Vec<Vec<u64>> {
    let mut out: Vec<Vec<u64>> = vec![Vec::new(); n];
    keys.iter().filter(|&&k| k % 3 != 0).for_each(|&k| out[(k as usize) % n].push(k));
    out
}

#[spmd(ranks = 2)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let mut keys = vec![0u64; 64];
    world.broadcast(&mut keys, 0)?;
    let mine: Vec<u64> = keys.iter().map(|k| k.wrapping_mul(world.rank() as u64 + 1)).collect();
    let out = bucket(world.size(), &mine);
    let send_counts: Vec<usize> = out.iter().map(Vec::len).collect();
    let recv_counts = send_counts.clone();
    let mut recv = vec![0u64; recv_counts.iter().sum()];
    world.all_to_all_v(&out.concat(), &send_counts, &mut recv, &recv_counts)?;
    Ok(())
}
