//! PageRank over a generated graph, vertices block-distributed, CSR rows per rank.

mod config;
mod exchange;
mod graph;
mod report;
mod solver;

use dist_runtime::prelude::*;

use config::{AppError, Config};
use exchange::ContributionPlan;
use graph::{LocalCsr, Partition};
use solver::Solver;

#[spmd]
fn main(world: Comm<World>) -> Result<(), AppError> {
    let cfg = Config::from_args()?;
    let (rank, size) = (world.rank(), world.size());
    let part = Partition { n: cfg.vertices, parts: size };
    let csr = LocalCsr::build(part.range(rank), cfg.vertices, cfg.avg_degree, cfg.seed);
    let plan = ContributionPlan::new(world.clone(), &csr, &part)?;
    let mut solver = Solver::new(world.clone(), cfg.clone(), csr, plan);
    let iters = solver.run()?;

    report::report(&world, &cfg, &part, &solver.pr, iters)
}
