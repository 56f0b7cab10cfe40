//! Red-black Gauss-Seidel for a 2-D Poisson problem on a process grid, checked against
//! the same iteration on one process.
//!
//! `cargo spmd run -n 4 -- --nx 24 --ny 17 --tol 1e-6`

mod cli;
mod grid;
mod solver;

use cli::Settings;
use dist_runtime::prelude::*;
use grid::Placement;
use solver::{Problem, Solver};

#[derive(Debug)]
enum Error {
    Config(String),
    Comm(dist_runtime::Error),
    Check(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Config(m) => write!(f, "configuration: {m}"),
            Error::Comm(e) => e.fmt(f),
            Error::Check(m) => write!(f, "check failed: {m}"),
        }
    }
}

impl From<dist_runtime::Error> for Error {
    fn from(e: dist_runtime::Error) -> Self {
        Error::Comm(e)
    }
}

#[spmd]
fn main(world: Comm<World>) -> Result<(), Error> {
    let cfg = Settings::from_env().map_err(Error::Config)?;
    let (px, py) = cfg.process_grid(world.size()).map_err(Error::Config)?;
    let place = Placement::new(&world, px, py)?;
    let prob = Problem { nx: cfg.nx, ny: cfg.ny };
    let mut solver = Solver::new(place, prob, px, py);
    let (iters, res) = solver.solve(cfg.tol, cfg.max_it, cfg.verbose)?;

    let (reference, ref_iters) = solver::serial_solve(prob, cfg.tol, cfg.max_it);
    let u = &solver.u;
    let mut worst = [u
        .points()
        .map(|(i, j, gi, gj)| (u.at(i, j) - reference.at(gi + 1, gj + 1)).abs())
        .fold(0.0f64, f64::max)];
    world.all_reduce(&mut worst, ReduceOp::Max)?;
    if iters != ref_iters {
        return Err(Error::Check(format!("{iters} iterations, the serial solver took {ref_iters}")));
    }
    if worst[0] > 1e-12 {
        return Err(Error::Check(format!("solution differs by {:.3e}", worst[0])));
    }
    if world.rank() == 0 {
        println!(
            "redblack_gs OK: {} x {} points on a {px} x {py} process grid, {iters} iterations, residual {res:.2e}, max difference {:.1e}",
            cfg.nx, cfg.ny, worst[0]
        );
    }
    Ok(())
}
