// A coordinator and its workers written as state machines: the coordinator keeps a slot
// per worker (`enum Slot`), counts the busy ones with `matches!`, and while a result is
// on its way polls for it with `test()`, working through the queue itself meanwhile;
// each worker steps through `enum State`, whose variants share their names with
// `Slot`'s, and which the worker names through an alias (`type W = State`). The check
// follows it whole (each variant of its own enum; a poll that finds
// nothing the first time and the result the next, one order the ranks can run in) and
// finds nothing wrong.
#![deny(deprecated)]
use dist_runtime::prelude::*;
use std::collections::VecDeque;

const RESULT: Tag<u64> = Tag::new(1);
const WORK: Tag<u64> = Tag::new(2);
const STOP: u64 = u64::MAX;

#[derive(Clone, Copy, PartialEq, Debug)]
enum Slot {
    Idle,
    Busy(u64),
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum State {
    Idle,
    Busy(u64),
    Done,
}

struct Coordinator<'a> {
    world: &'a Comm<World>,
    queue: VecDeque<u64>,
    slots: Vec<Slot>,
    done: u64,
}

impl Coordinator<'_> {
    fn busy(&self) -> usize {
        self.slots.iter().filter(|s| matches!(s, Slot::Busy(_))).count()
    }

    fn assign(&mut self, w: usize) -> dist_runtime::Result<()> {
        match self.queue.pop_front() {
            Some(t) => {
                self.world.send(w, WORK, &[t])?;
                self.slots[w] = Slot::Busy(t);
            }
            None => self.slots[w] = Slot::Idle,
        }
        Ok(())
    }

    fn run(&mut self, tasks: u64) -> dist_runtime::Result<()> {
        for w in 1..self.world.size() {
            self.assign(w)?;
        }
        while self.done < tasks {
            if self.busy() == 0 {
                self.queue.pop_front();
                self.done += 1;
                continue;
            }
            let mut msg = [0u64; 2];
            let st = {
                let mut req = self.world.irecv_any(RESULT, &mut msg)?;
                loop {
                    if let Some(st) = req.test()? {
                        break st;
                    }
                    if self.queue.pop_front().is_some() {
                        self.done += 1;
                    } else {
                        break req.wait()?;
                    }
                }
            };
            assert_eq!(self.slots[st.source], Slot::Busy(msg[0]));
            self.done += 1;
            self.assign(st.source)?;
        }
        for w in 1..self.world.size() {
            self.world.send(w, WORK, &[STOP])?;
        }
        Ok(())
    }
}

type W = State;

fn worker(world: &Comm<World>) -> dist_runtime::Result<u64> {
    let (mut state, mut did) = (W::Idle, 0);
    while state != State::Done {
        state = match state {
            State::Idle => {
                let mut t = [0u64];
                world.recv(0, WORK, &mut t)?;
                if t[0] == STOP {
                    W::Done
                } else {
                    W::Busy(t[0])
                }
            }
            W::Busy(t) => {
                world.send(0, RESULT, &[t, t * t])?;
                did += 1;
                State::Idle
            }
            State::Done => State::Done,
        };
    }
    Ok(did)
}

#[spmd(sizes = 1..=3)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let tasks = 6;
    if world.rank() == 0 {
        let slots = vec![Slot::Idle; world.size()];
        Coordinator { world: &world, queue: (0..tasks).collect(), slots, done: 0 }.run(tasks)?;
    } else {
        worker(&world)?;
    }
    world.barrier()?;
    Ok(())
}
