//! Master/worker protocol. Workers say hello on READY; the master answers each hello
//! and each RESULT with the next task on ASSIGN while the queue lasts; once every
//! result is in, each worker gets STOP.

use crate::tasks::{count_primes, Task};
use dist_runtime::prelude::*;

const READY: Tag<u64> = Tag::new(1);
const RESULT: Tag<u64> = Tag::new(2);
const ASSIGN: Tag<u64> = Tag::new(3);

const KIND_STOP: u64 = 0;
const KIND_WORK: u64 = 1;

/// What one rank did: tasks finished and primes it found (the master's are its own
/// when it works alone).
#[derive(Default, Debug)]
pub struct Tally {
    pub tasks_done: u64,
    pub primes: u64,
}

pub struct Master<'a> {
    world: &'a Comm<World>,
    queue: std::collections::VecDeque<Task>,
    outstanding: usize,
    /// Primes reported per task id.
    pub found: Vec<Option<u64>>,
    /// Tasks handed to each rank.
    pub handed: Vec<u64>,
}

impl<'a> Master<'a> {
    pub fn new(world: &'a Comm<World>, tasks: Vec<Task>) -> Master<'a> {
        let found = vec![None; tasks.len()];
        Master { world, queue: tasks.into(), outstanding: 0, found, handed: vec![0; world.size()] }
    }

    /// Gives `worker` its next task, if any is left; an idle worker waits for STOP.
    fn dispatch(&mut self, worker: usize) -> dist_runtime::Result<()> {
        if let Some(t) = self.queue.pop_front() {
            self.world.send(worker, ASSIGN, &[KIND_WORK, t.id, t.lo, t.hi])?;
            self.handed[worker] += 1;
            self.outstanding += 1;
        }
        Ok(())
    }

    pub fn run(&mut self) -> dist_runtime::Result<Tally> {
        let workers = self.world.size() - 1;
        if workers == 0 {
            // Nobody to farm out to: do it all here.
            let mut tally = Tally::default();
            while let Some(t) = self.queue.pop_front() {
                let c = count_primes(&t);
                self.found[t.id as usize] = Some(c);
                tally.tasks_done += 1;
                tally.primes += c;
            }
            return Ok(tally);
        }
        for _ in 0..workers {
            let mut hello = [0u64];
            let st = self.world.recv_any(READY, &mut hello)?;
            self.dispatch(st.source)?;
        }
        while self.outstanding > 0 {
            let mut msg = [0u64; 2];
            let st = self.world.recv_any(RESULT, &mut msg)?;
            self.outstanding -= 1;
            self.found[msg[0] as usize] = Some(msg[1]);
            self.dispatch(st.source)?;
        }
        for worker in 1..self.world.size() {
            self.world.send(worker, ASSIGN, &[KIND_STOP, 0, 0, 0])?;
        }
        Ok(Tally::default())
    }
}

pub fn work(world: &Comm<World>) -> dist_runtime::Result<Tally> {
    let mut tally = Tally::default();
    world.send(0, READY, &[world.rank() as u64])?;
    loop {
        let mut order = [0u64; 4];
        world.recv(0, ASSIGN, &mut order)?;
        if order[0] == KIND_STOP {
            break;
        }
        let task = Task { id: order[1], lo: order[2], hi: order[3] };
        let count = count_primes(&task);
        tally.tasks_done += 1;
        tally.primes += count;
        world.send(0, RESULT, &[task.id, count])?;
    }
    Ok(tally)
}
