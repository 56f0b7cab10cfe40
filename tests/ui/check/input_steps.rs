// A step count from the command line (the same on every rank): from the second step on,
// rank 0 enters a barrier the others never call. Found with the count at 2.
use dist_runtime::prelude::*;

#[spmd(sizes = 2..=3)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let steps: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(10);
    let mut g = [1.0f32; 8];
    for step in 0..steps {
        world.all_reduce(&mut g, ReduceOp::Sum)?;
        if step == 1 && world.rank() == 0 {
            world.barrier()?;
        }
    }
    Ok(())
}
