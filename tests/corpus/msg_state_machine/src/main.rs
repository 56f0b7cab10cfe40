//! An event-driven coordinator/worker protocol: rank 0 hands out tasks to whichever
//! worker reports back first (`irecv_any`), computing tasks itself while it waits;
//! workers are state machines over hand-encoded messages. At the end every rank agrees
//! on the counts, and each task's result is checked against a serial run: computed
//! exactly once, and right.
//!
//! `cargo spmd run -n 4 -- --tasks 500 --work 1000`

mod coordinator;
mod job;
mod msg;
mod worker;

use coordinator::Coordinator;
use dist_runtime::prelude::*;
use job::Config;
use msg::{DecodeError, Msg};
use std::fmt;
use worker::{Tally, Worker};

const COORDINATOR: usize = 0;

#[derive(Debug)]
pub enum ProtocolError {
    Usage(job::UsageError),
    Dist(dist_runtime::Error),
    Decode(DecodeError),
    Unexpected { rank: usize, state: String, msg: Msg },
    Duplicate { id: u64, from: usize },
    UnknownTask { id: u64, from: usize },
    Stalled { done: usize },
    Wrong(String),
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProtocolError::Usage(e) => write!(f, "{e}"),
            ProtocolError::Dist(e) => write!(f, "{e}"),
            ProtocolError::Decode(e) => write!(f, "bad message: {e}"),
            ProtocolError::Unexpected { rank, state, msg } => write!(f, "rank {rank} in state {state} got {msg:?}"),
            ProtocolError::Duplicate { id, from } => write!(f, "task {id} computed twice (again by rank {from})"),
            ProtocolError::UnknownTask { id, from } => write!(f, "rank {from} returned unknown task {id}"),
            ProtocolError::Stalled { done } => write!(f, "no task left to run and nobody busy after {done} results"),
            ProtocolError::Wrong(m) => write!(f, "wrong result: {m}"),
        }
    }
}

impl From<dist_runtime::Error> for ProtocolError {
    fn from(e: dist_runtime::Error) -> Self {
        ProtocolError::Dist(e)
    }
}

impl From<DecodeError> for ProtocolError {
    fn from(e: DecodeError) -> Self {
        ProtocolError::Decode(e)
    }
}

impl From<job::UsageError> for ProtocolError {
    fn from(e: job::UsageError) -> Self {
        ProtocolError::Usage(e)
    }
}

/// The coordinator's check of every result against the serial run.
fn verify(cfg: &Config, report: &coordinator::Report, total: [u64; 2]) -> Vec<String> {
    let want = job::serial(cfg);
    let mut problems = report.problems.clone();
    let wrong: Vec<usize> = (0..want.len()).filter(|&i| report.results[i] != want[i]).collect();
    if !wrong.is_empty() {
        problems.push(format!("{} of {} results differ from serial, first task {}", wrong.len(), want.len(), wrong[0]));
    }
    let want_sum = want.iter().enumerate().fold(0u64, |acc, (i, &v)| job::fold(acc, i as u64, v));
    if total != [cfg.tasks as u64, want_sum] {
        problems.push(format!(
            "ranks computed {} tasks (checksum {:#x}) in all; there are {} (checksum {want_sum:#x})",
            total[0], total[1], cfg.tasks
        ));
    }
    if report.by_rank.iter().sum::<u64>() != cfg.tasks as u64 {
        problems.push(format!("results arrived per rank: {:?}", report.by_rank));
    }
    problems
}

#[spmd]
fn main(world: Comm<World>) -> Result<(), ProtocolError> {
    let cfg = Config::parse(std::env::args().skip(1))?;
    let (r, n) = (world.rank(), world.size());

    let (tally, report) = if r == COORDINATOR {
        let report = Coordinator::new(&world, &cfg).run()?;
        let mine = Tally { computed: report.by_rank[COORDINATOR], checksum: report.checksum_by_rank[COORDINATOR] };
        (mine, Some(report))
    } else {
        (Worker::new(&world, COORDINATOR).run()?, None)
    };

    // Everyone agrees on how much was done before anyone leaves.
    let mut total = [tally.computed, tally.checksum];
    world.all_reduce(&mut total, ReduceOp::Sum)?;

    let mut verdict = [0u64];
    if let Some(report) = &report {
        let problems = verify(&cfg, report, total);
        for p in &problems {
            eprintln!("{p}");
        }
        verdict[0] = problems.len() as u64;
    }
    world.broadcast(&mut verdict, COORDINATOR)?;
    world.barrier()?;
    if verdict[0] > 0 {
        return Err(ProtocolError::Wrong(format!("{} problem(s) found by the coordinator", verdict[0])));
    }
    if let Some(report) = &report {
        println!(
            "OK: msg_state_machine: {} tasks over {n} ranks (coordinator {}), per rank {:?}: every task computed exactly once, results = serial",
            cfg.tasks,
            if cfg.local { "also computes" } else { "only coordinates" },
            report.by_rank
        );
    }
    Ok(())
}
