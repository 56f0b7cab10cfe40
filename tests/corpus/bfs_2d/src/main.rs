//! Breadth-first search with a 2-D partition of the adjacency matrix, checked against
//! a serial BFS.
//!
//! `cargo spmd run -n 4 -- --scale 7 --degree 4 --source 3 --grid 2x2`

mod bfs;
mod config;
mod graph;
mod grid;

use bfs::Bfs2d;
use config::Config;
use dist_runtime::prelude::*;
use grid::ProcGrid;

fn err(e: dist_runtime::Error) -> String {
    e.to_string()
}

#[spmd]
fn main(world: Comm<World>) -> Result<(), String> {
    let cfg = Config::from_args(std::env::args().skip(1))?;
    let n = world.size();
    let (pr, pc) = cfg.grid_for(n)?;
    let nv = 1usize << cfg.scale;
    let edges = graph::edges(nv, cfg.degree, cfg.seed);

    let grid = ProcGrid::new(&world, pr, pc, cfg.build).map_err(err)?;
    let mut bfs = Bfs2d::new(grid, nv, &edges, cfg.dedup);
    let depth = bfs.run(cfg.source, cfg.max_levels).map_err(err)?;

    // How many vertices were reached, over all ranks.
    let reached = bfs.levels.iter().filter(|&&l| l >= 0).count() as u64;
    let mut total = [reached];
    world.all_reduce(&mut total, ReduceOp::Sum).map_err(err)?;

    let root = 0;
    let gathered = bfs.gather_levels(root).map_err(err)?;
    if let Some(levels) = gathered {
        let want = graph::serial_bfs(nv, &edges, cfg.source);
        let wrong: Vec<usize> = (0..nv).filter(|&v| levels[v] != want[v]).collect();
        let want_reached = want.iter().filter(|&&l| l >= 0).count() as u64;
        if !wrong.is_empty() || total[0] != want_reached {
            return Err(format!(
                "BFS levels differ at {} vertices (first {:?}); reached {} vs {}",
                wrong.len(),
                wrong.first(),
                total[0],
                want_reached
            ));
        }
        let max_level = want.iter().max().copied().unwrap_or(0);
        println!(
            "bfs_2d: {nv} vertices, {} edges, grid {pr}x{pc}, {} reached, depth {max_level} ({depth} rounds): OK",
            edges.len(),
            total[0]
        );
    }
    Ok(())
}
