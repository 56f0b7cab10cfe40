// Reduce ops that do not apply to the buffer's element type: caught where the types
// are in the source (an annotation, a typed literal, a helper's parameter).
use dist_runtime::prelude::*;
use dist_runtime::Complex;

#[spmd(ranks = 2)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let mut grads = vec![0.5f32; 8];
    world.all_reduce(&mut grads, ReduceOp::BXor)?;
    Ok(())
}

#[spmd(ranks = 2)]
fn complex_max(world: Comm<World>) -> dist_runtime::Result<()> {
    let mut z = [Complex::new(1.0f64, 0.0)];
    world.reduce(&mut z, ReduceOp::Max, 0)?;
    Ok(())
}

#[spmd(ranks = 2)]
fn bool_avg(world: Comm<World>) -> dist_runtime::Result<()> {
    let mut done: [bool; 2] = [false, true];
    world.all_reduce(&mut done, ReduceOp::Avg)?;
    Ok(())
}

fn scale(world: &Comm<World>, counts: &mut [u32]) -> dist_runtime::Result<()> {
    world.all_reduce(counts, ReduceOp::PreMulSum(0.5))
}

#[spmd(ranks = 2)]
fn helper(world: Comm<World>) -> dist_runtime::Result<()> {
    let mut c = [1u32, 2];
    scale(&world, &mut c)?;
    // A buffer whose type the source does not spell out is left to the run-time check.
    let mut v: Vec<_> = (0..4).map(|i| i as f64).collect();
    world.all_reduce(&mut v, ReduceOp::Sum)?;
    Ok(())
}
