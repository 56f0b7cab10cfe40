// Expert-parallel dispatch: each rank sends its tokens' counts to their experts' ranks
// with an all-to-all, so what arrives differs from rank to rank. A rank that received
// no tokens skips the combine all-to-all: the others wait for it there.
use dist_runtime::prelude::*;

fn dispatch(world: &Comm<World>, routes: &[usize]) -> dist_runtime::Result<Vec<u64>> {
    let mut counts = vec![0u64; world.size()];
    for &dest in routes {
        counts[dest] += 1;
    }
    let mut received = vec![0u64; world.size()];
    world.all_to_all(&counts, &mut received)?;
    Ok(received)
}

fn combine(world: &Comm<World>, received: &[u64]) -> dist_runtime::Result<Vec<u64>> {
    let total: u64 = received.iter().sum();
    if total == 0 {
        return Ok(vec![0; world.size()]);
    }
    let mut back = vec![0u64; world.size()];
    world.all_to_all(received, &mut back)?;
    Ok(back)
}

#[spmd(sizes = 2..=3)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let routes: Vec<usize> = (0..world.rank() * 2).map(|t| t % world.size()).collect();
    let received = dispatch(&world, &routes)?;
    let back = combine(&world, &received)?;
    println!("{back:?}");
    Ok(())
}
