//! Distributed sparse transpose: rows of A (CSR) are block-distributed; each rank
//! buckets its nonzeros by the owner of their column, exchanges counts, then the
//! payloads (all_to_all_v or pairwise isend/irecv), and builds its rows of Aᵀ. Then
//! y = Aᵀx, gathered on rank 0. Everything is checked against the serial transpose.
//!
//! `cargo spmd run -n 3 -- --rows 1000 --cols 777 --mode both`

mod cli;
mod csr;
mod exchange;
mod transpose;

use cli::{ArgError, Config, Mode};
use csr::{BlockDist, Csr};
use dist_runtime::prelude::*;
use exchange::{AllToAllV, ExchangeError, Exchanger, Pairwise};
use std::fmt;

#[derive(Debug)]
enum AppError {
    Args(ArgError),
    Exchange(ExchangeError),
    Mismatch(String),
}

impl fmt::Display for AppError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AppError::Args(e) => write!(f, "arguments: {e}"),
            AppError::Exchange(e) => write!(f, "exchange: {e}"),
            AppError::Mismatch(m) => write!(f, "wrong result: {m}"),
        }
    }
}

impl From<ArgError> for AppError {
    fn from(e: ArgError) -> Self {
        AppError::Args(e)
    }
}

impl From<ExchangeError> for AppError {
    fn from(e: ExchangeError) -> Self {
        AppError::Exchange(e)
    }
}

impl From<dist_runtime::Error> for AppError {
    fn from(e: dist_runtime::Error) -> Self {
        AppError::Exchange(ExchangeError::Dist(e))
    }
}

fn exchangers(mode: Mode) -> Vec<Box<dyn Exchanger>> {
    match mode {
        Mode::AllToAll => vec![Box::new(AllToAllV)],
        Mode::Pairwise => vec![Box::new(Pairwise)],
        Mode::Both => vec![Box::new(AllToAllV), Box::new(Pairwise)],
    }
}

fn max_abs_diff(a: &[f64], b: &[f64]) -> f64 {
    if a.len() != b.len() {
        return f64::INFINITY;
    }
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max)
}

#[spmd]
fn main(world: Comm<World>) -> Result<(), AppError> {
    let (r, n) = (world.rank(), world.size());
    // Rank 0 reads the command line and hands the configuration to everyone.
    let mut words = if r == 0 { cli::parse(std::env::args().skip(1))?.to_words() } else { vec![0u64; Config::WORDS] };
    world.broadcast(&mut words, 0)?;
    let cfg = Config::from_words(&words)?;
    let rdist = BlockDist::new(cfg.rows, n);
    let tdist = BlockDist::new(cfg.cols, n);
    let a = Csr::generate(rdist.range(r), cfg.cols, cfg.nnz, cfg.seed);

    // The serial reference: every rank can build the whole matrix.
    let full = Csr::generate(0..cfg.rows, cfg.cols, cfg.nnz, cfg.seed);
    let full_t = full.transpose();
    let want = full_t.block(tdist.range(r));

    let mut problems = Vec::new();
    let mut transposes = Vec::new();
    for ex in exchangers(cfg.mode) {
        let at = transpose::distributed_transpose(&world, &a, cfg.rows, tdist, ex.as_ref())?;
        if at != want {
            problems.push(format!("rank {r}: {} gives {} nonzeros in rows {:?}, serial {}", ex.name(), at.nnz(), tdist.range(r), want.nnz()));
        }
        transposes.push((ex.name(), at));
    }

    // No nonzero lost or duplicated, over all ranks.
    let mut nnz = [a.nnz() as u64, transposes[0].1.nnz() as u64];
    world.all_reduce(&mut nnz, ReduceOp::Sum)?;
    if nnz != [full.nnz() as u64; 2] {
        problems.push(format!("rank {r}: {} nonzeros in A and {} in Aᵀ over all ranks, serial {}", nnz[0], nnz[1], full.nnz()));
    }

    let mut worst = 0.0f64;
    for it in 0..cfg.iters {
        let x = csr::input_vector(cfg.rows, it, cfg.seed);
        let (name, at) = &transposes[it % transposes.len()];
        // The check of each product falls to another rank, round-robin.
        let root = it % n;
        if let Some(y) = transpose::spmv_t(&world, at, &x, tdist, root)? {
            let d = max_abs_diff(&y, &full_t.matvec(&x));
            worst = worst.max(d);
            if d > 1e-9 {
                problems.push(format!("product {it} ({name}): y differs from serial Aᵀx by {d:.3e}"));
            }
        }
    }

    for p in &problems {
        eprintln!("{p}");
    }
    let mut bad = [problems.len() as u64];
    world.all_reduce(&mut bad, ReduceOp::Sum)?;
    if bad[0] > 0 {
        return Err(AppError::Mismatch(format!("{} problem(s) over {n} ranks", bad[0])));
    }
    if r == 0 {
        let names: Vec<&str> = transposes.iter().map(|(name, _)| *name).collect();
        println!(
            "OK: sparse_transpose: {}x{} with {} nonzeros over {n} ranks via {}: Aᵀ = serial transpose, {} products y = Aᵀx within {worst:.1e}",
            cfg.rows,
            cfg.cols,
            full.nnz(),
            names.join(" + "),
            cfg.iters
        );
    }
    Ok(())
}
