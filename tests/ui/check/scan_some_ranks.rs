// Offsets by exclusive scan, but rank 0 "knows" its offset is 0 and skips the call.
use dist_runtime::prelude::*;

#[spmd(ranks = 3)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let mut offset = [world.rank() as u64 + 1];
    if world.rank() != 0 {
        world.exscan(&mut offset, ReduceOp::Sum)?;
    }
    Ok(())
}
