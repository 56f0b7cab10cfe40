// Only the root of a `gather_object` gets `Some`: the other ranks leave at `None`, so the
// `all_reduce` after the match is reached by the root alone (the right neighbour, from
// `Option::filter`, is known too).
use dist_runtime::prelude::*;

#[spmd]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let (r, n) = (world.rank(), world.size());
    let right = Some(r + 1).filter(|&x| x < n);
    let mine = vec![r as u64, right.map_or(0, |x| x as u64)];
    let all = match world.gather_object(&mine, 0)? {
        Some(per_rank) => per_rank.into_iter().flatten().collect::<Vec<_>>(),
        None => return Ok(()),
    };
    let mut total = [all.iter().sum::<u64>()];
    world.all_reduce(&mut total, ReduceOp::Sum)?;
    Ok(())
}
