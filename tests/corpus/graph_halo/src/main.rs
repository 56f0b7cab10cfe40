//! Jacobi iteration for (alpha·I + L) x = b on a generated graph, vertices
//! block-partitioned over the ranks: every sweep exchanges the boundary values with each
//! neighbouring rank (isend/irecv, one buffer per neighbour), every k sweeps an
//! all_reduce of the residual decides whether to stop. Checked against the serial run.

mod config;
mod graph;
mod halo;
mod solver;

use config::Config;
use dist_runtime::prelude::*;
use graph::{rhs, Graph, Partition};
use halo::Halo;
use solver::LocalJacobi;

fn err(e: dist_runtime::Error) -> String {
    e.to_string()
}

#[spmd]
fn main(world: Comm<World>) -> Result<(), String> {
    let cfg = Config::from_args()?;
    let (r, p) = (world.rank(), world.size());
    let g = Graph::generate(cfg.vertices, cfg.chords, cfg.seed);
    let part = Partition { n: g.len(), parts: p };
    let mine = part.range(r);
    let halo = Halo::build(&world, &g, &part);
    let mut solver = LocalJacobi::new(&g, mine.start, mine.len(), halo, cfg.alpha);
    let norm_b = (0..g.len()).map(|v| rhs(v).powi(2)).sum::<f64>().sqrt();

    let mut sweeps = cfg.max_iter;
    let mut residual = f64::INFINITY;
    let mut largest_change = 0.0f64;
    for sweep in 1..=cfg.max_iter {
        let local_change = solver.sweep().map_err(err)?;
        largest_change = largest_change.max(local_change);
        if sweep % cfg.check_every == 0 {
            let mut res = [solver.local_residual().map_err(err)?];
            world.all_reduce(&mut res, ReduceOp::Sum).map_err(err)?;
            residual = res[0].sqrt();
            if residual <= cfg.tol * norm_b {
                sweeps = sweep;
                break;
            }
        }
    }

    // Compare with the serial iteration.
    let (want, want_sweeps) = solver::serial(&g, &cfg, &part);
    let diff = solver.x.iter().zip(&want[mine.clone()]).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    let mut worst = [diff, solver.halo.messages as f64];
    world.all_reduce(&mut worst, ReduceOp::Max).map_err(err)?;
    let ok = worst[0] <= 1e-12 && sweeps == want_sweeps;
    if r == 0 {
        let nb_counts: Vec<usize> = solver.halo.nbrs.iter().map(|nb| nb.recv_gids.len()).collect();
        println!(
            "graph_halo: {} vertices on {p} ranks, rank 0 ghosts per neighbour {nb_counts:?}, {sweeps} sweeps \
             (serial {want_sweeps}), residual {residual:.2e}, max |x - x_serial| {:.2e}: {}",
            g.len(),
            worst[0],
            if ok { "OK" } else { "MISMATCH" }
        );
    }
    if !ok {
        return Err(format!("rank {r}: differs from the serial Jacobi ({diff:.3e}, {sweeps} vs {want_sweeps} sweeps)"));
    }
    Ok(())
}
