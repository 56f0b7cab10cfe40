mod checkpoint;
mod config;
mod grid;
mod sweep;

use dist_runtime::prelude::*;

use config::{default_px, Config};
use grid::ProcGrid;
use sweep::{Octant, Sweeper};

const REL_TOL: f64 = 1e-12;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= REL_TOL * a.abs().max(b.abs()).max(1.0)
}

#[spmd]
fn main(world: Comm<World>) -> Result<(), Box<dyn std::error::Error>> {
    let cfg = Config::from_args()?;
    let px = cfg.px.unwrap_or_else(|| default_px(world.size()));
    let grid = ProcGrid::new(&world, px)?;
    let (nx, ny) = (cfg.nx, cfg.ny);
    let (gnx, gny) = (grid.px * nx, grid.py * ny);
    if world.rank() == 0 {
        println!(
            "KBA sweep: {} x {} ranks, {gnx} x {gny} cells, {} angles/octant, {} iterations",
            grid.px, grid.py, cfg.angles, cfg.iters
        );
    }

    let mut sweeper = Sweeper::new(&grid, nx, ny, cfg.angles);
    for it in 0..cfg.iters {
        sweeper.begin_iteration();
        for oct in Octant::ALL {
            sweeper.sweep(oct)?;
        }
        let mut change = [sweeper.local_change()];
        world.all_reduce(&mut change, ReduceOp::Max)?;
        if world.rank() == 0 {
            println!("iteration {it}: max |dphi| = {:.3e}", change[0]);
        }
    }

    let mut total = [sweeper.local_total()];
    world.all_reduce(&mut total, ReduceOp::Sum)?;
    let mut rough = [sweeper.roughness()?];
    world.all_reduce(&mut rough, ReduceOp::Sum)?;

    // Serial reference on every rank: the whole grid in one process.
    let phi_ref = sweep::serial_reference(gnx, gny, cfg.angles, cfg.iters);
    let total_ref: f64 = phi_ref.iter().sum();
    let rough_ref = sweep::serial_roughness(&phi_ref, gnx, gny);
    let mut block_ok = true;
    for j in 0..ny {
        for i in 0..nx {
            let g = (grid.jy * ny + j) * gnx + grid.ix * nx + i;
            block_ok &= sweeper.phi[j * nx + i] == phi_ref[g];
        }
    }
    if !block_ok {
        return Err(format!("rank {}: scalar flux differs from the serial reference", world.rank()).into());
    }
    if !close(total[0], total_ref) || !close(rough[0], rough_ref) {
        return Err(format!(
            "total flux {} (serial {total_ref}), roughness {} (serial {rough_ref})",
            total[0], rough[0]
        )
        .into());
    }
    if world.rank() == 0 {
        println!("total scalar flux {:.12} = serial reference; roughness {:.6e}", total[0], rough[0]);
    }

    if cfg.checkpoint {
        let shard = checkpoint::make_shard(world.rank(), &sweeper.phi);
        let saved = checkpoint::save(&grid, &shard, nx * ny)?;
        checkpoint::restore(&grid, saved.as_ref(), &shard, nx * ny)?;
    }
    if world.rank() == 0 {
        println!("OK");
    }
    Ok(())
}
