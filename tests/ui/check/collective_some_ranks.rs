// Only rank 0 reaches the all_reduce: the others would hang in torch or MPI.
use dist_runtime::prelude::*;

#[spmd]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let mut loss = [1.0f32];
    if world.rank() == 0 {
        world.all_reduce(&mut loss, ReduceOp::Sum)?;
        println!("loss {}", loss[0]);
    }
    world.barrier()
}
