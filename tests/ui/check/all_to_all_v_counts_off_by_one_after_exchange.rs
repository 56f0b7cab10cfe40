// The counts are exchanged, and what arrived is traced to its sender: a receiver that
// adds one to each count expects one element more than its sender sends.
use dist_runtime::prelude::*;

#[spmd(sizes = 1..=8)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let (r, n) = (world.rank(), world.size());
    let send_counts: Vec<usize> = (0..n).map(|j| (r + 2 * j) % 3).collect();
    let counts64: Vec<u64> = send_counts.iter().map(|&c| c as u64).collect();
    let mut got = vec![0u64; n];
    world.all_to_all(&counts64, &mut got)?;
    let recv_counts: Vec<usize> = got.iter().map(|&c| c as usize + 1).collect();
    let send = vec![1.0f64; send_counts.iter().sum()];
    let mut recv = vec![0.0f64; recv_counts.iter().sum()];
    world.all_to_all_v(&send, &send_counts, &mut recv, &recv_counts)?;
    Ok(())
}
