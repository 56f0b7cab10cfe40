//! 1-D heat equation with heat loss, explicit in time. Rank 0 loads the initial
//! profile and scatters it in uneven blocks; each step overlaps the halo exchange
//! (isend/irecv) with the interior update; a global residual decides convergence.
//! Rank 0 gathers the result and compares it with a serial solve.

mod config;
mod grid;
mod reference;
mod solver;
mod stencil;

use dist_runtime::prelude::*;

use grid::{load_initial_profile, Decomposition};
use solver::HeatSolver;

const ROOT: usize = 0;

#[spmd]
fn main(world: Comm<World>) -> Result<(), String> {
    let p = config::parse_args(std::env::args().skip(1))?;
    let (rank, size) = (world.rank(), world.size());
    let comm_err = |e: dist_runtime::Error| format!("rank {rank}: {e}");

    // Only the root reads the input; everyone else learns its length.
    let profile = if rank == ROOT { load_initial_profile(p.points, p.seed) } else { Vec::new() };
    let mut len = [profile.len() as u64];
    world.broadcast(&mut len, ROOT).map_err(comm_err)?;
    let blocks = Decomposition::new(len[0] as usize, size);
    if blocks.counts.contains(&0) {
        return Err(format!("{} points cannot be split over {size} ranks", len[0]));
    }

    let mut block = vec![0.0f64; blocks.counts[rank]];
    let source = if rank == ROOT { Some(&profile[..]) } else { None };
    world.scatter_v(source, &mut block, &blocks.counts, ROOT).map_err(comm_err)?;

    let mut solver = HeatSolver::new(world.clone(), block, &p);
    let summary = solver.run(&p).map_err(comm_err)?;

    let mut rod = if rank == ROOT { vec![0.0f64; blocks.total()] } else { Vec::new() };
    let sink = if rank == ROOT { Some(&mut rod[..]) } else { None };
    world.gather_v(solver.values(), sink, &blocks.counts, ROOT).map_err(comm_err)?;

    if rank == ROOT {
        let (want, want_summary) = reference::solve(&profile, &p, &blocks);
        if want_summary.steps != summary.steps {
            return Err(format!("stopped after {} steps, serial after {}", summary.steps, want_summary.steps));
        }
        let worst = rod.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0f64, f64::max);
        if worst > 1e-12 {
            return Err(format!("max |distributed - serial| = {worst:e}"));
        }
        println!(
            "OK heat_overlap ranks={size} points={} steps={} residual={:.3e} max_diff={worst:.1e}",
            blocks.total(),
            summary.steps,
            summary.residual
        );
    }
    Ok(())
}
