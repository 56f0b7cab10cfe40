// A master hands out chunks of a task queue to whichever worker asks first (`recv_any`)
// and tells each to stop when the queue is empty; workers loop on the replies. The
// check follows it at every size (the replies' contents reach the workers, and the
// requests are taken in one order the ranks can run in) and finds nothing wrong.
// (Not under `strict`, where the order of arrival is rank-local data.)
use dist_runtime::prelude::*;

const REQUEST: Tag<u64> = Tag::new(1);
const ASSIGN: Tag<u64> = Tag::new(2);
const STOP: u64 = u64::MAX;

struct Master<'a> {
    world: &'a Comm<World>,
    next: u64,
    tasks: u64,
    chunk: u64,
    handed: Vec<u64>,
}

impl Master<'_> {
    fn serve(&mut self) -> dist_runtime::Result<u64> {
        let (mut stopped, mut done) = (0, 0);
        let mut report = [0u64; 2];
        while stopped < self.world.size() - 1 {
            let st = self.world.recv_any(REQUEST, &mut report)?;
            done += report[1];
            let reply = if self.next < self.tasks {
                let count = self.chunk.min(self.tasks - self.next);
                self.next += count;
                self.handed[st.source] += 1;
                [self.next - count, count]
            } else {
                stopped += 1;
                [STOP, 0]
            };
            self.world.send(st.source, ASSIGN, &reply)?;
        }
        Ok(done)
    }
}

fn work(world: &Comm<World>) -> dist_runtime::Result<u64> {
    let mut report = [0u64, 0];
    let mut mine = 0;
    loop {
        world.send(0, REQUEST, &report)?;
        let mut a = [0u64; 2];
        world.recv(0, ASSIGN, &mut a)?;
        if a[0] == STOP {
            return Ok(mine);
        }
        mine += a[1];
        report = [a[0], a[1]];
    }
}

#[spmd(sizes = 1..=4)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let tasks = 23;
    let mine = if world.size() == 1 {
        tasks
    } else if world.rank() == 0 {
        let mut m = Master { world: &world, next: 0, tasks, chunk: 4, handed: vec![0; world.size()] };
        m.serve()?
    } else {
        work(&world)?
    };
    let mut total = [if world.rank() == 0 { mine } else { 0 }];
    world.all_reduce(&mut total, ReduceOp::Max)?;
    assert_eq!(total[0], tasks);
    Ok(())
}
