// A non-blocking collective whose request is forgotten instead of waited.
use dist_runtime::prelude::*;

#[spmd(ranks = 2)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let mut g = [1.0f32; 8];
    let req = world.all_reduce_async(&mut g, ReduceOp::Sum)?;
    std::mem::forget(req);
    world.barrier()?;
    Ok(())
}
