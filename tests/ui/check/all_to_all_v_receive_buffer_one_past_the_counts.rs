// A key shuffle: each rank buckets its own keys by owner, exchanges the bucket sizes,
// and sizes its receive buffer one past their sum (room for a sentinel that never
// arrives), which the call refuses.
use dist_runtime::prelude::*;

fn local_keys(rank: usize) -> Vec<u64> {
    let seed = std::process::id() as u64;
    (0..30 + 7 * rank as u64).map(|i| (i * 40503 + seed) % 1009).collect()
}

#[spmd(sizes = 1..=8)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let n = world.size();
    let keys = local_keys(world.rank());
    let mut buckets: Vec<Vec<u64>> = vec![Vec::new(); n];
    for k in &keys {
        buckets[(*k as usize) % n].push(*k);
    }
    let send_counts: Vec<usize> = buckets.iter().map(Vec::len).collect();
    let mut got = vec![0u64; n];
    let sizes: Vec<u64> = send_counts.iter().map(|&c| c as u64).collect();
    world.all_to_all(&sizes, &mut got)?;
    let recv_counts: Vec<usize> = got.iter().map(|&c| c as usize).collect();
    let total: usize = recv_counts.iter().sum();
    let send: Vec<u64> = buckets.concat();
    let mut recv = vec![u64::MAX; total + 1];
    world.all_to_all_v(&send, &send_counts, &mut recv, &recv_counts)?;
    Ok(())
}
