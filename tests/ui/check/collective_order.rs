// Even ranks broadcast then all_reduce, odd ranks the other way round.
use dist_runtime::prelude::*;

#[spmd(sizes = 2..=4)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let mut w = [0.5f32; 16];
    let mut g = [1.0f32; 16];
    if world.rank() % 2 == 0 {
        world.broadcast(&mut w, 0)?;
        world.all_reduce(&mut g, ReduceOp::Avg)?;
    } else {
        world.all_reduce(&mut g, ReduceOp::Avg)?;
        world.broadcast(&mut w, 0)?;
    }
    Ok(())
}
