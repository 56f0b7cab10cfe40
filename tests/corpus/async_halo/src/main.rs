//! 2-D heat equation by Jacobi sweeps on a block-row decomposition, the ghost-row
//! exchange overlapped with the interior update, a convergence test by all_reduce every
//! few sweeps, and a checkpoint gather to rank 0 compared against a serial solve.
//!
//! `cargo spmd run -n 4 -- --rows 50 --cols 36 --steps 600 --check-every 10`

mod checkpoint;
mod cli;
mod decomp;
mod halo;
mod jacobi;
mod solver;

use dist_runtime::prelude::*;
use std::error::Error;

#[spmd]
fn main(world: Comm<World>) -> Result<(), Box<dyn Error>> {
    let cfg = cli::Config::parse(std::env::args().skip(1))?;
    let mut solver = solver::Solver::new(&world, &cfg)?;
    let outcome = solver.run(&cfg)?;

    let grid = checkpoint::gather_grid(&world, solver.owned(), cfg.rows, cfg.cols)?;
    // [matches the serial solve, sweeps it took]
    let mut verdict = [0u64; 2];
    if let Some(grid) = &grid {
        if let Some(path) = &cfg.checkpoint {
            checkpoint::write(path, grid, cfg.cols)?;
        }
        let (want, serial) = jacobi::serial_solve(&cfg);
        let worst = grid.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
        let same = worst == 0.0 && serial == outcome;
        if !same {
            eprintln!("distributed: {outcome:?}, serial: {serial:?}, largest difference {worst:e}");
        }
        verdict = [u64::from(same), serial.sweeps as u64];
    }
    world.broadcast(&mut verdict, checkpoint::ROOT)?;
    if verdict[0] != 1 {
        return Err(format!("rank {}: the grid differs from the serial solve", world.rank()).into());
    }

    let mut overlapped = [solver.overlapped as u64];
    world.reduce(&mut overlapped, ReduceOp::Sum, checkpoint::ROOT)?;
    if world.rank() == checkpoint::ROOT {
        println!(
            "async_halo OK: {} ranks, {} x {} grid, {} sweeps ({}), last change {:.3e}, {} requests overlapped",
            world.size(),
            cfg.rows,
            cfg.cols,
            outcome.sweeps,
            if outcome.converged { "converged" } else { "step limit" },
            outcome.change,
            overlapped[0]
        );
    }
    Ok(())
}
