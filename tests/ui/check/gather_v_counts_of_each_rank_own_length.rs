// Uneven blocks (10 cells over 3 ranks: 4, 3, 3) gathered to rank 0 with counts each
// rank builds from its own block's length, as if every block were as long as its own:
// rank 0's counts add up to 12, not the 10 its buffer holds, and rank 1 passes other
// counts than rank 0. The error names the count lists that differ, not rank 0's buffer.
use dist_runtime::prelude::*;

const CELLS: usize = 10;

fn block(rank: usize, size: usize) -> std::ops::Range<usize> {
    let (q, r) = (CELLS / size, CELLS % size);
    let lo = rank * q + rank.min(r);
    lo..lo + q + usize::from(rank < r)
}

#[spmd(sizes = 3..=3)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let (rank, size) = (world.rank(), world.size());
    let mine: Vec<f64> = block(rank, size).map(|i| i as f64).collect();
    let counts = vec![mine.len(); size];
    let mut all = vec![0.0; CELLS];
    let recv = (rank == 0).then_some(&mut all[..]);
    world.gather_v(&mine, recv, &counts, 0)?;
    Ok(())
}
