//! Distributed Gaussian elimination with partial pivoting.
//!
//! `cargo spmd run -n 4 -- --n 64 --seed 7`

mod cli;
mod matrix;
mod solver;

use dist_runtime::prelude::*;
use matrix::System;
use solver::DistLu;
use std::error::Error;

const TOLERANCE: f64 = 1e-8;

#[spmd]
fn main(world: Comm<World>) -> Result<(), Box<dyn Error>> {
    let opts = cli::Options::from_args()?;
    let (rank, size) = (world.rank(), world.size());
    let sys = System::random(opts.n, opts.seed);

    let mut lu = DistLu::new(world.clone(), &sys);
    let t0 = std::time::Instant::now();
    lu.factor()?;
    let x = lu.back_substitute()?;
    let elapsed = t0.elapsed();

    // How the columns came out over the ranks, for the report.
    let held = [lu.local_columns() as u64];
    if rank == 0 {
        let mut per_rank = vec![0u64; size];
        world.gather(&held, Some(&mut per_rank[..]), 0)?;
        println!("n = {}, {} ranks, columns per rank {:?}, solved in {:.1?}", opts.n, size, per_rank, elapsed);
        if opts.verbose {
            for (k, p) in lu.pivots.iter().enumerate().filter(|(k, p)| k != *p) {
                println!("  column {k}: rows {k} <-> {p}");
            }
        }
    } else {
        world.gather(&held, None, 0)?;
    }

    // Rank 0 solves the same system serially; everybody checks the residual.
    let mut failed = [0u8];
    let resid = sys.residual(&x);
    let scale = sys.b.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(1.0);
    if resid > TOLERANCE * scale * opts.n as f64 {
        eprintln!("rank {rank}: residual {resid:.3e} too large");
        failed[0] = 1;
    }
    if rank == 0 {
        let want = matrix::solve_serial(&sys)?;
        let diff = x.iter().zip(&want).map(|(a, b)| (a - b).abs() / b.abs().max(1.0)).fold(0.0, f64::max);
        println!("max relative difference to the serial solve: {diff:.3e}, residual {resid:.3e}");
        if diff > TOLERANCE {
            eprintln!("solution differs from the serial solve");
            failed[0] = 1;
        }
    }
    world.all_reduce(&mut failed, ReduceOp::Max)?;
    if failed[0] != 0 {
        return Err("distributed LU does not match the serial reference".into());
    }
    if rank == 0 {
        println!("OK");
    }
    Ok(())
}
