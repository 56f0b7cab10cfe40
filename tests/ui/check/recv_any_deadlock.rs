// Only rank 1 can send what rank 0's receive from any source waits for, so the check
// follows it as a receive from rank 1: both ranks receive first, a deadlock.
use dist_runtime::prelude::*;

const PING: Tag<u64> = Tag::new(1);

#[spmd(ranks = 2)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let mut v = [0u64];
    if world.rank() == 0 {
        let st = world.recv_any(PING, &mut v)?;
        world.send(st.source, PING, &v)?;
    } else {
        world.recv(0, PING, &mut v)?;
        world.send(0, PING, &v)?;
    }
    Ok(())
}
