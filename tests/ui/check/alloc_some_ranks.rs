// Only the ranks that hold data allocate a shared buffer: an allocation is a collective.
use dist_runtime::prelude::*;

#[spmd(ranks = 4)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    if world.rank() % 2 == 0 {
        let mut grads = world.alloc::<f32>(1024)?;
        grads.fill(1.0);
    }
    Ok(())
}
