// Each rank names itself as the root.
use dist_runtime::prelude::*;

#[spmd]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let mut w = [0u64; 4];
    world.broadcast(&mut w, world.rank())?;
    Ok(())
}
