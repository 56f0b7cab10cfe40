// Rank 0 waits for a message from any rank with a tag nobody sends it.
use dist_runtime::prelude::*;

const RESULT: Tag<u64> = Tag::new(1);
const OTHER: Tag<u64> = Tag::new(2);

#[spmd(ranks = 2)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    if world.rank() == 0 {
        let mut v = [0u64];
        world.recv_any(RESULT, &mut v)?;
    } else {
        world.send(0, OTHER, &[1])?;
    }
    Ok(())
}
