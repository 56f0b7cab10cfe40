//! Messages between the master and the workers.
//!
//! A worker sends a `RESULT` message: `[first task, count, value...]` (count 0 on its
//! first request); the master answers on `ASSIGN` with `[first task, count]`, or
//! `[STOP, 0]` when the queue is empty.

use dist_runtime::prelude::*;

pub const RESULT: Tag<f64> = Tag::new(21);
pub const ASSIGN: Tag<u64> = Tag::new(22);
pub const STOP: u64 = u64::MAX;

/// A chunk of finished work, as it travels.
pub struct Report {
    pub first: u64,
    pub values: Vec<f64>,
}

impl Report {
    pub fn empty() -> Report {
        Report { first: 0, values: Vec::new() }
    }

    pub fn encode(&self) -> Vec<f64> {
        let mut out = Vec::with_capacity(self.values.len() + 2);
        out.push(self.first as f64);
        out.push(self.values.len() as f64);
        out.extend_from_slice(&self.values);
        out
    }

    pub fn decode(buf: &[f64]) -> Report {
        let (first, count) = (buf[0] as u64, buf[1] as usize);
        Report { first, values: buf[2..2 + count].to_vec() }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Assignment {
    Chunk { first: u64, count: u64 },
    Stop,
}

impl Assignment {
    pub fn encode(self) -> [u64; 2] {
        match self {
            Assignment::Chunk { first, count } => [first, count],
            Assignment::Stop => [STOP, 0],
        }
    }

    pub fn decode(buf: [u64; 2]) -> Assignment {
        if buf[0] == STOP {
            Assignment::Stop
        } else {
            Assignment::Chunk { first: buf[0], count: buf[1] }
        }
    }
}
