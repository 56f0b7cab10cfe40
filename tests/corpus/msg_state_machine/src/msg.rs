//! The protocol's messages, encoded by hand into a fixed frame of `u64` words:
//! `[kind, a, b, c]`. Each kind travels on its own tag except `Task` and `Done`, which
//! share the worker's inbox so that a worker waits on one tag only.

use crate::job::TaskSpec;
use dist_runtime::prelude::*;
use std::fmt;

pub const FRAME: usize = 4;

/// Worker → coordinator: "I am up".
pub const HELLO: Tag<u64> = Tag::new(1);
/// Coordinator → worker: a task, or the end.
pub const WORK: Tag<u64> = Tag::new(2);
/// Worker → coordinator: a result (and "give me more").
pub const RESULT: Tag<u64> = Tag::new(3);
/// Worker → coordinator, at shutdown: what this worker did.
pub const STATS: Tag<u64> = Tag::new(4);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Msg {
    Hello { worker: u64 },
    Task(TaskSpec),
    Result { id: u64, value: u64, worker: u64 },
    Done,
    Stats { worker: u64, computed: u64, checksum: u64 },
}

#[derive(Debug)]
pub enum DecodeError {
    Short(usize),
    UnknownKind(u64),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Short(n) => write!(f, "frame of {n} words, expected {FRAME}"),
            DecodeError::UnknownKind(k) => write!(f, "unknown message kind {k}"),
        }
    }
}

impl std::error::Error for DecodeError {}

const K_HELLO: u64 = 1;
const K_TASK: u64 = 2;
const K_RESULT: u64 = 3;
const K_DONE: u64 = 4;
const K_STATS: u64 = 5;

impl Msg {
    pub fn tag(&self) -> Tag<u64> {
        match self {
            Msg::Hello { .. } => HELLO,
            Msg::Task(_) | Msg::Done => WORK,
            Msg::Result { .. } => RESULT,
            Msg::Stats { .. } => STATS,
        }
    }

    pub fn encode(&self) -> [u64; FRAME] {
        match *self {
            Msg::Hello { worker } => [K_HELLO, worker, 0, 0],
            Msg::Task(t) => [K_TASK, t.id, t.seed, t.rounds],
            Msg::Result { id, value, worker } => [K_RESULT, id, value, worker],
            Msg::Done => [K_DONE, 0, 0, 0],
            Msg::Stats { worker, computed, checksum } => [K_STATS, worker, computed, checksum],
        }
    }

    pub fn decode(w: &[u64]) -> Result<Msg, DecodeError> {
        if w.len() != FRAME {
            return Err(DecodeError::Short(w.len()));
        }
        Ok(match w[0] {
            K_HELLO => Msg::Hello { worker: w[1] },
            K_TASK => Msg::Task(TaskSpec { id: w[1], seed: w[2], rounds: w[3] }),
            K_RESULT => Msg::Result { id: w[1], value: w[2], worker: w[3] },
            K_DONE => Msg::Done,
            K_STATS => Msg::Stats { worker: w[1], computed: w[2], checksum: w[3] },
            k => return Err(DecodeError::UnknownKind(k)),
        })
    }
}

/// Sends `msg` to `dst` on its kind's tag.
pub fn post(comm: &Comm<World>, dst: usize, msg: Msg) -> dist_runtime::Result<()> {
    comm.send(dst, msg.tag(), &msg.encode())
}

/// Receives one message of `tag` from `src`.
pub fn fetch(comm: &Comm<World>, src: usize, tag: Tag<u64>) -> Result<Msg, crate::ProtocolError> {
    let mut frame = [0u64; FRAME];
    comm.recv(src, tag, &mut frame)?;
    Ok(Msg::decode(&frame)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let msgs = [
            Msg::Hello { worker: 3 },
            Msg::Task(TaskSpec { id: 7, seed: 9, rounds: 11 }),
            Msg::Result { id: 1, value: u64::MAX, worker: 2 },
            Msg::Done,
            Msg::Stats { worker: 1, computed: 5, checksum: 42 },
        ];
        for m in msgs {
            assert_eq!(Msg::decode(&m.encode()).unwrap(), m);
        }
    }
}
