// Only rank 0, the rank that prints, counts the correct predictions with an
// all_reduce in a helper; every rank then reduces the loss. The two calls look alike
// (one number, summed), so rank 0's count meets the others' loss: the error names the
// count, the call that only rank 0 makes.
use dist_runtime::prelude::*;

fn count(world: &Comm<World>, local: u64) -> dist_runtime::Result<u64> {
    let mut c = [local];
    world.all_reduce(&mut c, ReduceOp::Sum)?;
    Ok(c[0])
}

#[spmd(ranks = 2)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let correct = 10 + world.rank() as u64;
    if world.rank() == 0 {
        println!("accuracy: {}", count(&world, correct)?);
    }
    let mut loss = [correct];
    world.all_reduce(&mut loss, ReduceOp::Sum)?;
    Ok(())
}
