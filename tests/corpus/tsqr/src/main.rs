//! Distributed linear least squares, min ||A x - b||, by tall-skinny QR.
//!
//! Each rank owns a contiguous block of rows of A (m x k) and b, factors its block of
//! [A | b] locally, and the (k+1) x (k+1) R factors are combined up a binary tree.
//! The root back-substitutes for x and broadcasts it; every rank then contributes to
//! the residual, and rank 0 checks x against a serial solve.

mod cli;
mod linalg;
mod problem;
mod solver;
mod tsqr;

use dist_runtime::prelude::*;

use cli::Config;
use solver::Solver;

#[spmd]
fn main(world: Comm<World>) -> Result<(), Box<dyn std::error::Error>> {
    let cfg = Config::from_args()?;
    let solver = Solver::new(world, cfg);
    solver.run()
}
