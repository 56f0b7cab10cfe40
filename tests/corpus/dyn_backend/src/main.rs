//! Distributed logistic regression behind a communication trait of our own: the
//! trainer sees a `&dyn Reducer`, which is dist's world, a two-level reducer made of a
//! split and a subgroup, or (for the serial reference) nothing at all.
//!
//! `cargo spmd run -n 4 -- --iters 40 --len 3000 --flat`

mod backend;
mod cli;
mod data;
mod train;

use backend::{CommError, DistReducer, Hierarchical, REPORT, Reducer, Serial, fold_token};
use cli::{ArgError, Config};
use data::Shard;
use dist_runtime::prelude::*;
use std::fmt;
use train::{Model, Trainer};

#[derive(Debug)]
enum AppError {
    Args(ArgError),
    Comm(CommError),
    Dist(dist_runtime::Error),
    Mismatch(String),
}

impl fmt::Display for AppError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AppError::Args(e) => write!(f, "bad arguments: {e}"),
            AppError::Comm(e) => write!(f, "communication: {e}"),
            AppError::Dist(e) => write!(f, "dist: {e}"),
            AppError::Mismatch(m) => write!(f, "result differs from the serial reference: {m}"),
        }
    }
}

impl From<ArgError> for AppError {
    fn from(e: ArgError) -> Self {
        AppError::Args(e)
    }
}

impl From<CommError> for AppError {
    fn from(e: CommError) -> Self {
        AppError::Comm(e)
    }
}

impl From<dist_runtime::Error> for AppError {
    fn from(e: dist_runtime::Error) -> Self {
        AppError::Dist(e)
    }
}

/// What one training run produced.
struct Outcome {
    model: Model,
    losses: Vec<f64>,
    correct: u64,
    optimizer: &'static str,
}

/// Normalise, initialise on the last rank, broadcast, train, count: the same code for
/// the distributed run and the serial reference.
fn run_pipeline(reducer: &dyn Reducer, cfg: &Config, mut shard: Shard) -> Result<Outcome, CommError> {
    let scale = train::feature_scale(reducer, &shard.samples, cfg.dim)?;
    shard.normalize(&scale);
    let root = reducer.size() - 1;
    let mut model = if reducer.rank() == root { Model::random(cfg.dim, cfg.seed) } else { Model::zeros(cfg.dim) };
    reducer.broadcast_from(&mut model.w, root)?;
    let mut trainer = Trainer::new(reducer, train::optimizer(cfg.lr, cfg.momentum, cfg.dim), cfg.len);
    let losses = trainer.fit(&mut model, &shard.samples, cfg.iters)?;
    let correct = trainer.accuracy(&model, &shard.samples)?;
    Ok(Outcome { model, losses, correct, optimizer: trainer.optimizer_name() })
}

/// Every rank reports its block of samples to rank 0, which checks that the blocks
/// tile `0..len` in rank order.
fn check_tiling(world: &Comm<World>, shard: &Shard, len: usize) -> Result<Option<String>, AppError> {
    let mine = [shard.range.start as u64, shard.range.end as u64, shard.len() as u64];
    if world.rank() != 0 {
        world.send(0, REPORT, &mine)?;
        return Ok(None);
    }
    let mut next = 0u64;
    let mut report = mine;
    let mut problem = None;
    for src in 0..world.size() {
        if src > 0 {
            world.recv(src, REPORT, &mut report)?;
        }
        let [start, end, count] = report;
        if problem.is_none() && (start != next || end - start != count) {
            problem = Some(format!("rank {src} reports samples {start}..{end} ({count}), expected to start at {next}"));
        }
        next = end;
    }
    if problem.is_none() && next != len as u64 {
        problem = Some(format!("the blocks end at {next}, not {len}"));
    }
    Ok(problem)
}

fn max_rel_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs() / x.abs().max(y.abs()).max(1e-12)).fold(0.0, f64::max)
}

#[spmd]
fn main(world: Comm<World>) -> Result<(), AppError> {
    let cfg = Config::from_args(std::env::args().skip(1))?;
    let (r, n) = (world.rank(), world.size());

    let reducer: Box<dyn Reducer> = if cfg.flat {
        Box::new(DistReducer::new(world.clone(), "world"))
    } else {
        Box::new(Hierarchical::new(&world, cfg.per_node)?)
    };
    let shard = data::shard(cfg.len, cfg.dim, cfg.seed, r, n);
    let tiling = check_tiling(&world, &shard, cfg.len)?;
    let got = run_pipeline(reducer.as_ref(), &cfg, shard)?;

    // Every rank must hold bitwise the same weights: pass a checksum around the ring.
    let token = reducer.ring_fold(got.model.checksum())?;

    let serial = run_pipeline(&Serial, &cfg, data::shard(cfg.len, cfg.dim, cfg.seed, 0, 1))?;
    let mut problems: Vec<String> = tiling.into_iter().collect();
    let dw = max_rel_diff(&got.model.w, &serial.model.w);
    if dw > 1e-8 || got.model.w.len() != serial.model.w.len() {
        problems.push(format!("rank {r}: weights differ by {dw:.2e}"));
    }
    let dl = max_rel_diff(&got.losses, &serial.losses);
    if dl > 1e-8 || got.losses.len() != serial.losses.len() {
        problems.push(format!("rank {r}: loss curve differs by {dl:.2e}"));
    }
    if got.correct != serial.correct {
        problems.push(format!("rank {r}: {} correct, serial {}", got.correct, serial.correct));
    }
    if r == 0 {
        let want = (0..n).fold(0, |acc, _| fold_token(acc, got.model.checksum()));
        if token != want {
            problems.push(format!("ring checksum {token:#x}, expected {want:#x}: ranks hold different weights"));
        }
    }
    for p in &problems {
        eprintln!("{p}");
    }
    // Agree on the verdict so every rank exits the same way.
    let mut bad = [problems.len() as u64];
    world.all_reduce(&mut bad, ReduceOp::Sum)?;
    if bad[0] > 0 {
        return Err(AppError::Mismatch(format!("{} problem(s) over {n} ranks", bad[0])));
    }
    if r == 0 {
        println!(
            "OK: dyn_backend: {} with {} over {n} ranks, {} samples x {} features, {} iters: loss {:.5} -> {:.5}, accuracy {:.3}, weights = serial (max rel diff {dw:.1e})",
            reducer.describe(),
            got.optimizer,
            cfg.len,
            cfg.dim,
            cfg.iters,
            got.losses.first().copied().unwrap_or(f64::NAN),
            got.losses.last().copied().unwrap_or(f64::NAN),
            got.correct as f64 / cfg.len as f64,
        );
    }
    Ok(())
}
