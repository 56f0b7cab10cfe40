// A convergence all-reduce in a loop that the last rank skips ("its change was already
// passed on"): the others' extra collectives meet the last rank's next one, of another
// op. The error names the skipped collective as reached by some ranks only, however
// many steps the loop takes, not the later call as one with a different op.
use dist_runtime::prelude::*;

const STEPS: usize = 3;

#[spmd(sizes = 2..=4)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let last = world.rank() + 1 == world.size();
    for _ in 0..STEPS {
        let mut change = [world.rank() as f64];
        if !last {
            world.all_reduce(&mut change, ReduceOp::Max)?;
        }
    }
    let mut total = [1.0f64];
    world.all_reduce(&mut total, ReduceOp::Sum)?;
    Ok(())
}
