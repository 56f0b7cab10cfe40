//! A worker: a state machine driven by the coordinator's messages.

use crate::ProtocolError;
use crate::job::{self, TaskSpec};
use crate::msg::{self, Msg, WORK};
use dist_runtime::prelude::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Not yet announced to the coordinator.
    Connecting,
    /// Waiting for a task or the end.
    Idle,
    /// Holding a task to compute.
    Busy(TaskSpec),
    /// Told to stop; the statistics are still to be sent.
    Reporting,
    Finished,
}

/// What one worker did.
#[derive(Debug, Clone, Copy, Default)]
pub struct Tally {
    pub computed: u64,
    pub checksum: u64,
}

pub struct Worker<'a> {
    comm: &'a Comm<World>,
    coordinator: usize,
    state: State,
    tally: Tally,
}

impl<'a> Worker<'a> {
    pub fn new(comm: &'a Comm<World>, coordinator: usize) -> Self {
        Worker { comm, coordinator, state: State::Connecting, tally: Tally::default() }
    }

    pub fn run(mut self) -> Result<Tally, ProtocolError> {
        while self.state != State::Finished {
            self.state = self.step(self.state)?;
        }
        Ok(self.tally)
    }

    fn me(&self) -> u64 {
        self.comm.rank() as u64
    }

    fn step(&mut self, state: State) -> Result<State, ProtocolError> {
        match state {
            State::Connecting => {
                msg::post(self.comm, self.coordinator, Msg::Hello { worker: self.me() })?;
                Ok(State::Idle)
            }
            State::Idle => match msg::fetch(self.comm, self.coordinator, WORK)? {
                Msg::Task(t) => Ok(State::Busy(t)),
                Msg::Done => Ok(State::Reporting),
                other => Err(ProtocolError::Unexpected { rank: self.comm.rank(), state: format!("{state:?}"), msg: other }),
            },
            State::Busy(t) => {
                let value = job::compute(&t);
                self.tally.computed += 1;
                self.tally.checksum = job::fold(self.tally.checksum, t.id, value);
                msg::post(self.comm, self.coordinator, Msg::Result { id: t.id, value, worker: self.me() })?;
                Ok(State::Idle)
            }
            State::Reporting => {
                let Tally { computed, checksum } = self.tally;
                msg::post(self.comm, self.coordinator, Msg::Stats { worker: self.me(), computed, checksum })?;
                Ok(State::Finished)
            }
            State::Finished => Ok(State::Finished),
        }
    }
}
