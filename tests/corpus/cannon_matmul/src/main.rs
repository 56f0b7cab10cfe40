//! C = A · B by Cannon's algorithm on a q × q grid (q = floor(sqrt(p))), blocks padded
//! to ceil(n / q); ranks past q² sit out of the grid but join the world's collectives.

mod blocks;
mod cannon;
mod config;
mod grid;

use dist_runtime::prelude::*;

use cannon::Cannon;
use config::Config;
use grid::Grid;

#[spmd]
fn main(world: Comm<World>) -> Result<(), String> {
    let cfg = Config::from_args()?;
    let err = |e: dist_runtime::Error| e.to_string();
    let grid = Grid::build(&world).map_err(err)?;
    // [multiply-adds done, ranks that worked], summed over the world; then rank 0's verdict.
    let mut work = [0u64, 0];
    let mut verdict = [0u8];

    let Some(grid) = grid else {
        // Idle: nothing to compute, but the world's collectives need us.
        world.all_reduce(&mut work, ReduceOp::Sum).map_err(err)?;
        world.broadcast(&mut verdict, 0).map_err(err)?;
        return if verdict[0] == 1 { Ok(()) } else { Err("rank 0 found a wrong product".into()) };
    };

    let mut cannon = Cannon::new(&grid, &cfg);
    cannon.run().map_err(err)?;
    let (q, nb, n) = (grid.q, cannon.nb, cfg.n);
    let mut worst = None;
    if grid.all.rank() == 0 {
        let mut all = vec![0.0; q * q * nb * nb];
        grid.all.gather(&cannon.c, Some(&mut all[..]), 0).map_err(err)?;
        let got = blocks::assemble(&all, n, nb, q);
        let want = blocks::serial_matmul(cfg.seed, n);
        worst = Some(got.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max));
    } else {
        grid.all.gather(&cannon.c, None, 0).map_err(err)?;
    }

    work = [cannon.multiply_adds, 1];
    world.all_reduce(&mut work, ReduceOp::Sum).map_err(err)?;
    verdict[0] = u8::from(worst.is_none_or(|w| w <= cfg.tol));
    world.broadcast(&mut verdict, 0).map_err(err)?;
    if verdict[0] != 1 {
        return Err(format!("product differs from serial (max |diff| {worst:?})"));
    }
    if let Some(w) = worst {
        let p = world.size();
        println!(
            "cannon OK: n {n} on a {q}x{q} grid of {p} ranks ({} idle), blocks {nb}x{nb}, {} multiply-adds by {} ranks, max diff {w:.2e}",
            p - q * q,
            work[0],
            work[1]
        );
    }
    Ok(())
}
