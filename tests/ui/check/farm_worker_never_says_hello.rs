// A task farm whose workers forget to say hello: the master waits in `recv_any` for a
// hello no worker sends, while every worker waits for its first assignment. The check
// cannot follow the master past the `recv_any` (whose sender decides who gets the next
// task), nor a worker past its first receive (what it got decides whether it stops),
// but each waits forever before it gets there: an error at the `recv_any`.
use dist_runtime::prelude::*;
use std::collections::VecDeque;

const READY: Tag<u64> = Tag::new(1);
const ASSIGN: Tag<u64> = Tag::new(3);
const STOP: u64 = 0;

fn master(world: &Comm<World>, mut queue: VecDeque<u64>) -> dist_runtime::Result<()> {
    for _ in 1..world.size() {
        let mut hello = [0u64];
        let st = world.recv_any(READY, &mut hello)?;
        if let Some(t) = queue.pop_front() {
            world.send(st.source, ASSIGN, &[1, t])?;
        }
    }
    for w in 1..world.size() {
        world.send(w, ASSIGN, &[STOP, 0])?;
    }
    Ok(())
}

fn work(world: &Comm<World>) -> dist_runtime::Result<u64> {
    let mut done = 0;
    loop {
        let mut order = [0u64; 2];
        world.recv(0, ASSIGN, &mut order)?;
        if order[0] == STOP {
            return Ok(done);
        }
        done += order[1];
    }
}

#[spmd(sizes = 2..=4)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    if world.rank() == 0 {
        master(&world, (0..10).collect())?;
    } else {
        work(&world)?;
    }
    Ok(())
}
