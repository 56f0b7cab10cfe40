//! Ranks 1..n: ask for work, do it, send the results back with the next request.

use crate::protocol::{Assignment, Report, ASSIGN, RESULT};
use crate::task;
use dist_runtime::prelude::*;

pub struct Worker {
    world: Comm<World>,
    seed: u64,
    pub done: u64,
}

impl Worker {
    pub fn new(world: &Comm<World>, seed: u64) -> Worker {
        Worker { world: world.clone(), seed, done: 0 }
    }

    fn request(&self, report: &Report) -> dist_runtime::Result<Assignment> {
        self.world.send(0, RESULT, &report.encode())?;
        let mut a = [0u64; 2];
        self.world.recv(0, ASSIGN, &mut a)?;
        Ok(Assignment::decode(a))
    }

    pub fn run(&mut self) -> dist_runtime::Result<()> {
        let mut report = Report::empty();
        loop {
            match self.request(&report)? {
                Assignment::Chunk { first, count } => {
                    let values: Vec<f64> = (first..first + count).map(|id| task::run(self.seed, id)).collect();
                    self.done += count;
                    report = Report { first, values };
                }
                Assignment::Stop => break,
            }
        }
        Ok(())
    }
}
