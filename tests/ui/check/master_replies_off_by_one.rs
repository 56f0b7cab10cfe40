// A master answers each request from any worker, but takes the source for a 0-based
// worker index and replies to `st.source - 1`: the reply meant for worker 1 goes to rank
// 0, the master itself, where no receive takes it. Caught at four ranks, where three
// workers race for the master's receives.
use dist_runtime::prelude::*;

const REQUEST: Tag<u64> = Tag::new(1);
const ASSIGN: Tag<u64> = Tag::new(2);

#[spmd(ranks = 4)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    if world.rank() == 0 {
        for _ in 1..world.size() {
            let mut req = [0u64];
            let st = world.recv_any(REQUEST, &mut req)?;
            let worker = st.source - 1;
            world.send(worker, ASSIGN, &[req[0] * 2])?;
        }
    } else {
        world.send(0, REQUEST, &[world.rank() as u64])?;
        let mut a = [0u64];
        world.recv(0, ASSIGN, &mut a)?;
    }
    Ok(())
}
