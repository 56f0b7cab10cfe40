//! The coordinator: hands out tasks one at a time to whichever worker reports back
//! first (receives from any source), computes tasks itself while it waits, and shuts
//! the workers down once every task has exactly one result.

use crate::ProtocolError;
use crate::job::{self, Config, TaskSpec};
use crate::msg::{self, FRAME, HELLO, Msg, RESULT, STATS};
use dist_runtime::prelude::*;
use std::collections::VecDeque;

/// What the coordinator knows of each worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    Starting,
    Idle,
    Busy(u64),
    Released,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Handshake,
    Dispatch,
    Shutdown,
    Finished,
}

/// The outcome, as the coordinator saw it.
pub struct Report {
    /// Each task's result.
    pub results: Vec<u64>,
    /// Tasks computed by each rank.
    pub by_rank: Vec<u64>,
    /// Checksum (`job::fold`) of the results each rank computed.
    pub checksum_by_rank: Vec<u64>,
    /// Mismatches between the workers' own statistics and what arrived here.
    pub problems: Vec<String>,
}

pub struct Coordinator<'a> {
    comm: &'a Comm<World>,
    local: bool,
    phase: Phase,
    queue: VecDeque<TaskSpec>,
    slots: Vec<Slot>,
    results: Vec<Option<u64>>,
    done: usize,
    by_rank: Vec<u64>,
    checksum_by_rank: Vec<u64>,
    problems: Vec<String>,
}

impl<'a> Coordinator<'a> {
    pub fn new(comm: &'a Comm<World>, cfg: &Config) -> Self {
        let n = comm.size();
        let queue: VecDeque<TaskSpec> = job::tasks(cfg).into();
        let mut slots = vec![Slot::Starting; n];
        slots[comm.rank()] = Slot::Released;
        Coordinator {
            comm,
            local: cfg.local,
            phase: Phase::Handshake,
            results: vec![None; queue.len()],
            queue,
            slots,
            done: 0,
            by_rank: vec![0; n],
            checksum_by_rank: vec![0; n],
            problems: Vec::new(),
        }
    }

    pub fn run(mut self) -> Result<Report, ProtocolError> {
        while self.phase != Phase::Finished {
            self.phase = match self.phase {
                Phase::Handshake => self.handshake()?,
                Phase::Dispatch => self.dispatch()?,
                Phase::Shutdown => self.shutdown()?,
                Phase::Finished => Phase::Finished,
            };
        }
        let results = self.results.iter().map(|r| r.unwrap_or(0)).collect();
        Ok(Report { results, by_rank: self.by_rank, checksum_by_rank: self.checksum_by_rank, problems: self.problems })
    }

    fn workers(&self) -> impl Iterator<Item = usize> + use<'_> {
        let me = self.comm.rank();
        (0..self.comm.size()).filter(move |&w| w != me)
    }

    fn busy(&self) -> usize {
        self.slots.iter().filter(|s| matches!(s, Slot::Busy(_))).count()
    }

    /// Gives `w` the next task, or marks it idle.
    fn assign(&mut self, w: usize) -> Result<(), ProtocolError> {
        match self.queue.pop_front() {
            Some(t) => {
                msg::post(self.comm, w, Msg::Task(t))?;
                self.slots[w] = Slot::Busy(t.id);
            }
            None => self.slots[w] = Slot::Idle,
        }
        Ok(())
    }

    fn record(&mut self, id: u64, value: u64, by: usize) -> Result<(), ProtocolError> {
        let slot = self.results.get_mut(id as usize).ok_or(ProtocolError::UnknownTask { id, from: by })?;
        if slot.is_some() {
            return Err(ProtocolError::Duplicate { id, from: by });
        }
        *slot = Some(value);
        self.done += 1;
        self.by_rank[by] += 1;
        self.checksum_by_rank[by] = job::fold(self.checksum_by_rank[by], id, value);
        Ok(())
    }

    fn compute_here(&mut self, t: TaskSpec) -> Result<(), ProtocolError> {
        let me = self.comm.rank();
        self.record(t.id, job::compute(&t), me)
    }

    fn handshake(&mut self) -> Result<Phase, ProtocolError> {
        let mut frame = [0u64; FRAME];
        for _ in 1..self.comm.size() {
            let st = self.comm.recv_any(HELLO, &mut frame)?;
            match Msg::decode(&frame[..st.count])? {
                Msg::Hello { worker } if worker as usize == st.source && self.slots[st.source] == Slot::Starting => {
                    self.assign(st.source)?;
                }
                other => return Err(self.unexpected(other)),
            }
        }
        Ok(Phase::Dispatch)
    }

    fn dispatch(&mut self) -> Result<Phase, ProtocolError> {
        let comm = self.comm;
        while self.done < self.results.len() {
            if self.busy() == 0 {
                // Nobody else is working (no workers, or the queue ran dry before
                // they all got one): the coordinator computes.
                let t = self.queue.pop_front().ok_or(ProtocolError::Stalled { done: self.done })?;
                self.compute_here(t)?;
                continue;
            }
            let mut frame = [0u64; FRAME];
            let st = {
                let mut req = comm.irecv_any(RESULT, &mut frame)?;
                loop {
                    if let Some(st) = req.test()? {
                        break st;
                    }
                    match self.queue.pop_front() {
                        Some(t) if self.local => self.compute_here(t)?,
                        Some(t) => {
                            self.queue.push_front(t);
                            break req.wait()?;
                        }
                        None => break req.wait()?,
                    }
                }
            };
            match Msg::decode(&frame[..st.count])? {
                Msg::Result { id, value, worker } if worker as usize == st.source => {
                    if self.slots[st.source] != Slot::Busy(id) {
                        return Err(self.unexpected(Msg::Result { id, value, worker }));
                    }
                    self.record(id, value, st.source)?;
                    self.assign(st.source)?;
                }
                other => return Err(self.unexpected(other)),
            }
        }
        Ok(Phase::Shutdown)
    }

    fn shutdown(&mut self) -> Result<Phase, ProtocolError> {
        let workers: Vec<usize> = self.workers().collect();
        for &w in &workers {
            msg::post(self.comm, w, Msg::Done)?;
            self.slots[w] = Slot::Released;
        }
        for &w in &workers {
            match msg::fetch(self.comm, w, STATS)? {
                Msg::Stats { worker, computed, checksum } if worker as usize == w => {
                    if computed != self.by_rank[w] || checksum != self.checksum_by_rank[w] {
                        self.problems.push(format!(
                            "worker {w} says it computed {computed} tasks (checksum {checksum:#x}); {} arrived (checksum {:#x})",
                            self.by_rank[w], self.checksum_by_rank[w]
                        ));
                    }
                }
                other => return Err(self.unexpected(other)),
            }
        }
        Ok(Phase::Finished)
    }

    fn unexpected(&self, msg: Msg) -> ProtocolError {
        ProtocolError::Unexpected { rank: self.comm.rank(), state: format!("{:?}", self.phase), msg }
    }
}
