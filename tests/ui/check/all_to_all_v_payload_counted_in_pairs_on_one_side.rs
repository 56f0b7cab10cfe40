// A word count shuffle: each rank sends (word id, count) pairs, two u64 each. The
// number of pairs is exchanged first; the sender's payload counts are two per pair,
// but the receiver's are the pair counts as they arrived.
use dist_runtime::prelude::*;

fn local_words(rank: usize) -> Vec<u64> {
    let seed = std::process::id() as u64;
    (0..40 + 3 * rank as u64).map(|i| (i * 2654435761 + seed) % 97).collect()
}

#[spmd(sizes = 1..=8)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let n = world.size();
    let words = local_words(world.rank());
    let owner = |w: u64| (w as usize) % n;
    let pairs: Vec<u64> = (0..n).map(|d| words.iter().filter(|w| owner(**w) == d).count() as u64).collect();
    let mut recv_pairs = vec![0u64; n];
    world.all_to_all(&pairs, &mut recv_pairs)?;
    let send_counts: Vec<usize> = pairs.iter().map(|&c| 2 * c as usize).collect();
    let recv_counts: Vec<usize> = recv_pairs.iter().map(|&c| c as usize).collect();
    let send: Vec<u64> = (0..n).flat_map(|d| words.iter().filter(move |w| owner(**w) == d).flat_map(|w| [*w, 1])).collect();
    let mut recv = vec![0u64; recv_counts.iter().sum()];
    world.all_to_all_v(&send, &send_counts, &mut recv, &recv_counts)?;
    Ok(())
}
