// A master serves requests from any worker until each was told to stop, but counts
// itself among the workers: after the last worker stopped it waits for one more request,
// which no rank sends. An error at the `recv_any`.
use dist_runtime::prelude::*;

const REQUEST: Tag<u64> = Tag::new(1);
const ASSIGN: Tag<u64> = Tag::new(2);
const STOP: u64 = u64::MAX;

fn serve(world: &Comm<World>, tasks: u64) -> dist_runtime::Result<()> {
    let (mut next, mut stopped) = (0, 0);
    while stopped < world.size() {
        let mut done = [0u64];
        let st = world.recv_any(REQUEST, &mut done)?;
        let reply = if next < tasks {
            next += 1;
            next - 1
        } else {
            stopped += 1;
            STOP
        };
        world.send(st.source, ASSIGN, &[reply])?;
    }
    Ok(())
}

#[spmd(sizes = 2..=4)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    if world.rank() == 0 {
        serve(&world, 10)?;
    } else {
        let mut last = [0u64];
        loop {
            world.send(0, REQUEST, &last)?;
            world.recv(0, ASSIGN, &mut last)?;
            if last[0] == STOP {
                break;
            }
        }
    }
    Ok(())
}
