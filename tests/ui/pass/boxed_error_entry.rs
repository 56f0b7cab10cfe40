// An entry whose program has errors of its own returns `Result<(), Box<dyn Error>>`:
// `?` converts dist's errors, and the check follows it like `dist_runtime::Result`.
use dist_runtime::prelude::*;

#[spmd(ranks = 2)]
fn main(world: Comm<World>) -> Result<(), Box<dyn std::error::Error>> {
    let steps: usize = std::env::args().nth(1).unwrap_or_else(|| "2".into()).parse()?;
    let mut x = [world.rank() as f64; 4];
    for _ in 0..steps {
        world.all_reduce(&mut x, ReduceOp::Sum)?;
    }
    if x[0] < 0.0 {
        return Err(format!("rank {}: negative sum {}", world.rank(), x[0]).into());
    }
    Ok(())
}
