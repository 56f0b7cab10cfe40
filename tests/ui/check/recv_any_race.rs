// A manager takes results from any worker: two workers race for the first receive, so
// `strict` (which turns "left to run time" into an error) names the race.
use dist_runtime::prelude::*;

const RESULT: Tag<u64> = Tag::new(1);

#[spmd(ranks = 3, strict)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    if world.rank() == 0 {
        for _ in 1..world.size() {
            let mut v = [0u64];
            let _st = world.recv_any(RESULT, &mut v)?;
        }
    } else {
        world.send(0, RESULT, &[world.rank() as u64])?;
    }
    Ok(())
}
