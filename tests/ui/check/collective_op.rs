// Rank 0 reduces with Max, the others with Sum.
use dist_runtime::prelude::*;

#[spmd(sizes = 2..=8)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let mut x = [world.rank() as i64];
    let op = if world.rank() == 0 { ReduceOp::Max } else { ReduceOp::Sum };
    world.all_reduce(&mut x, op)?;
    Ok(())
}
