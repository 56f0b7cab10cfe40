//! SUMMA matrix multiply on a 2-D process grid, checked against a serial matmul.
//!
//! cargo spmd run -n 6 -- --grid 2x3 --m 17 --n 13 --k 19 --panel 4

mod grid;
mod matrix;
mod summa;

use dist_runtime::prelude::*;

use grid::Grid;
use summa::Dims;

struct Config {
    dims: Dims,
    panel: usize,
    grid: Option<(usize, usize)>,
}

fn parse_args() -> Result<Config, String> {
    let mut cfg = Config { dims: Dims { m: 24, n: 20, k: 28 }, panel: 4, grid: None };
    let args: Vec<String> = std::env::args().skip(1).collect();
    for pair in args.chunks(2) {
        let value = pair.get(1).ok_or_else(|| format!("{} needs a value", pair[0]))?;
        let num = || value.parse::<usize>().map_err(|_| format!("bad number {value:?} for {}", pair[0]));
        match pair[0].as_str() {
            "--m" => cfg.dims.m = num()?,
            "--n" => cfg.dims.n = num()?,
            "--k" => cfg.dims.k = num()?,
            "--panel" => cfg.panel = num()?.max(1),
            "--grid" => cfg.grid = Some(grid::parse_shape(value).ok_or(format!("--grid wants RxC, got {value}"))?),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(cfg)
}

#[spmd]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let cfg = parse_args().map_err(dist_runtime::Error::Env)?;
    let d = cfg.dims;
    let grid = Grid::new(&world, cfg.grid)?;
    let local = summa::Local::new(&grid, d);

    let (c, steps) = summa::summa(&grid, d, &local, cfg.panel)?;
    let gathered = summa::collect_to_root(&grid, d, &c)?;

    // Rank 0 checks; everyone returns the same verdict.
    let mut verdict = [0.0f64];
    if let Some(full) = &gathered {
        let want = summa::serial_reference(d);
        verdict[0] = full.data.iter().zip(&want.data).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max);
    }
    world.broadcast(&mut verdict, 0)?;
    if !(verdict[0] <= 1e-10) {
        return Err(dist_runtime::Error::Mismatch {
            comm: "World".into(),
            msg: format!("SUMMA result differs from the serial matmul by {:.3e}", verdict[0]),
        });
    }
    if world.rank() == 0 {
        println!(
            "OK summa: {}x{} grid, C = A({}x{}) * B({}x{}) in {steps} panel steps, max error {:.1e}",
            grid.pr, grid.pc, d.m, d.k, d.k, d.n, verdict[0]
        );
    }
    Ok(())
}
