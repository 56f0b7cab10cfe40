//! Rank 0: hands out chunks of task ids on request and collects the results.

use crate::protocol::{Assignment, Report, ASSIGN, RESULT};
use dist_runtime::prelude::*;

pub struct Master {
    world: Comm<World>,
    next: u64,
    tasks: u64,
    chunk: u64,
    pub results: Vec<Option<f64>>,
    /// Chunks handed to each worker.
    pub handed: Vec<u64>,
}

impl Master {
    pub fn new(world: &Comm<World>, tasks: u64, chunk: u64) -> Master {
        Master {
            world: world.clone(),
            next: 0,
            tasks,
            chunk,
            results: vec![None; tasks as usize],
            handed: vec![0; world.size()],
        }
    }

    fn next_assignment(&mut self) -> Assignment {
        if self.next >= self.tasks {
            return Assignment::Stop;
        }
        let count = self.chunk.min(self.tasks - self.next);
        let a = Assignment::Chunk { first: self.next, count };
        self.next += count;
        a
    }

    fn store(&mut self, r: Report) -> Result<(), String> {
        for (k, v) in r.values.into_iter().enumerate() {
            let slot = &mut self.results[r.first as usize + k];
            if slot.is_some() {
                return Err(format!("task {} reported twice", r.first as usize + k));
            }
            *slot = Some(v);
        }
        Ok(())
    }

    /// Serves requests until every worker has been told to stop.
    pub fn serve(&mut self) -> Result<(), Box<dyn std::error::Error>> {
        let workers = self.world.size() - 1;
        let mut stopped = 0;
        let mut buf = vec![0.0; self.chunk as usize + 2];
        while stopped < workers {
            let st = self.world.recv_any(RESULT, &mut buf)?;
            self.store(Report::decode(&buf[..st.count]))?;
            let a = self.next_assignment();
            if a == Assignment::Stop {
                stopped += 1;
            } else {
                self.handed[st.source] += 1;
            }
            self.world.send(st.source, ASSIGN, &a.encode())?;
        }
        Ok(())
    }

    /// No workers: the master runs every task itself.
    pub fn run_alone(&mut self, seed: u64) -> Result<(), String> {
        while let Assignment::Chunk { first, count } = self.next_assignment() {
            let values = (first..first + count).map(|id| crate::task::run(seed, id)).collect();
            self.store(Report { first, values })?;
            self.handed[0] += 1;
        }
        Ok(())
    }
}
