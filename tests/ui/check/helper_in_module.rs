// The deadlock is in a helper of another module file: found, and reported at the call
// that reaches it.
use dist_runtime::prelude::*;

#[path = "modules/exchange.rs"]
mod comms;

#[spmd(ranks = 2)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let mine = [world.rank() as f32; 1024];
    let mut theirs = [0f32; 1024];
    comms::exchange(&world, &mine, &mut theirs)?;
    Ok(())
}
