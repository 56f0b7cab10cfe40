// Ranks pass all_reduce buffers of different lengths (rank 0 has one element more):
// NCCL would read past the shorter buffers; the check compares the lengths it can see.
use dist_runtime::prelude::*;

#[spmd(ranks = 2)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let len = if world.rank() == 0 { 5 } else { 4 };
    let mut grads = vec![0.0f32; len];
    world.all_reduce(&mut grads, ReduceOp::Sum)?;
    Ok(())
}
