// A work queue: the master answers requests from any worker, and each worker asks for
// work until the master says stop, the loop's condition being the request itself (a send
// and a receive per test). Correct; the check cannot follow the replies' peers (the
// sources `recv_any` returns at two or more workers) and says so with a warning, and it
// must never refuse it (it did: it took the worker's loop to end after one request).
use dist_runtime::prelude::*;

const REQ: Tag<u64> = Tag::new(1);
const WORK: Tag<u64> = Tag::new(2);

fn request(world: &Comm<World>, done: u64) -> dist_runtime::Result<Option<u64>> {
    world.send(0, REQ, &[done])?;
    let mut a = [0u64];
    world.recv(0, WORK, &mut a)?;
    Ok((a[0] != u64::MAX).then_some(a[0]))
}

#[spmd(sizes = 1..=3)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let tasks = 10u64;
    if world.rank() == 0 {
        let (mut next, mut stopped) = (0u64, 0);
        while stopped < world.size() - 1 {
            let mut done = [0u64];
            let st = world.recv_any(REQ, &mut done)?;
            let reply = if next < tasks {
                next += 1;
                next - 1
            } else {
                stopped += 1;
                u64::MAX
            };
            world.send(st.source, WORK, &[reply])?;
        }
    } else {
        let mut done = 0;
        while let Some(t) = request(&world, done)? {
            done = t;
        }
    }
    Ok(())
}
