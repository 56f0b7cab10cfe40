// A constant in a pattern (`LEADER =>`) compares; it does not bind a new name that every
// rank would match.
use dist_runtime::prelude::*;

const LEADER: usize = 1;

#[spmd(ranks = 2)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    match world.rank() {
        LEADER => world.barrier()?,
        _ => {}
    }
    Ok(())
}
