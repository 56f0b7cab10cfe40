// A task farm as it is often written: the master keeps a `VecDeque` of tasks collected
// from a range, answers each worker's hello and each result with the next task while
// the queue lasts (`if let Some(t) = self.queue.pop_front()`), then tells every worker
// to stop; workers loop until told. After the farm the workers form a communicator of
// their own and reduce over it. The check follows all of it (the queue's length, what
// the messages carry, the split the workers reach only once told to stop) and finds
// nothing wrong: no construct left to the run-time checks.
#![deny(deprecated)]
use dist_runtime::prelude::*;
use std::collections::VecDeque;

const READY: Tag<u64> = Tag::new(1);
const RESULT: Tag<u64> = Tag::new(2);
const ASSIGN: Tag<u64> = Tag::new(3);
const STOP: u64 = 0;
const WORK: u64 = 1;

dist_runtime::group!(Crew);

#[derive(Clone, Copy)]
struct Task {
    id: u64,
    lo: u64,
    hi: u64,
}

fn make_tasks(limit: u64, chunk: u64) -> Vec<Task> {
    (0..limit.div_ceil(chunk)).map(|id| Task { id, lo: id * chunk, hi: ((id + 1) * chunk).min(limit) }).collect()
}

struct Master<'a> {
    world: &'a Comm<World>,
    queue: VecDeque<Task>,
    outstanding: usize,
}

impl Master<'_> {
    fn dispatch(&mut self, worker: usize) -> dist_runtime::Result<()> {
        if let Some(t) = self.queue.pop_front() {
            self.world.send(worker, ASSIGN, &[WORK, t.id, t.lo, t.hi])?;
            self.outstanding += 1;
        }
        Ok(())
    }

    fn run(&mut self) -> dist_runtime::Result<u64> {
        let mut total = 0;
        if self.world.size() == 1 {
            while let Some(t) = self.queue.pop_front() {
                total += t.hi - t.lo;
            }
            return Ok(total);
        }
        for _ in 1..self.world.size() {
            let mut hello = [0u64];
            let st = self.world.recv_any(READY, &mut hello)?;
            self.dispatch(st.source)?;
        }
        while self.outstanding > 0 {
            let mut msg = [0u64; 2];
            let st = self.world.recv_any(RESULT, &mut msg)?;
            self.outstanding -= 1;
            total += msg[1];
            self.dispatch(st.source)?;
        }
        for w in 1..self.world.size() {
            self.world.send(w, ASSIGN, &[STOP, 0, 0, 0])?;
        }
        Ok(total)
    }
}

fn work(world: &Comm<World>) -> dist_runtime::Result<u64> {
    let mut done = 0;
    world.send(0, READY, &[world.rank() as u64])?;
    loop {
        let mut order = [0u64; 4];
        world.recv(0, ASSIGN, &mut order)?;
        if order[0] == STOP {
            break;
        }
        done += 1;
        world.send(0, RESULT, &[order[1], order[3] - order[2]])?;
    }
    Ok(done)
}

#[spmd(sizes = 1..=4)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let tasks = make_tasks(100, 15);
    let n_tasks = tasks.len() as u64;
    let (total, done) = if world.rank() == 0 {
        let mut m = Master { world: &world, queue: tasks.into(), outstanding: 0 };
        (m.run()?, 0)
    } else {
        (0, work(&world)?)
    };
    let crew = world.split::<Crew>(u32::from(world.rank() > 0), world.rank() as i64)?;
    if world.rank() > 0 {
        let mut sum = [done];
        crew.all_reduce(&mut sum, ReduceOp::Sum)?;
        assert_eq!(sum[0], n_tasks);
    } else {
        assert_eq!(total, 100);
    }
    Ok(())
}
