//! 3-D 7-point Jacobi on an nx × ny × nz grid over a 2-D (x, y) process grid, checked on
//! rank 0 against one process. `cargo spmd run -n 4 -- --nx 24 --ny 20 --nz 8 --overlap`

mod config;
mod grid;
mod halo;
mod kernel;
mod solver;

use config::Config;
use dist_runtime::prelude::*;
use solver::{serial_reference, Solver};

#[derive(Debug)]
enum AppError { Config(String), Dist(dist_runtime::Error), Check(String) }

impl std::fmt::Display for AppError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AppError::Config(m) => write!(f, "bad configuration: {m}"),
            AppError::Dist(e) => write!(f, "communication failed: {e}"),
            AppError::Check(m) => write!(f, "result check failed: {m}"),
        }
    }
}

impl From<dist_runtime::Error> for AppError {
    fn from(e: dist_runtime::Error) -> Self { AppError::Dist(e) }
}

#[spmd]
fn main(world: Comm<World>) -> Result<(), AppError> {
    let cfg = Config::from_env().map_err(AppError::Config)?;
    if cfg.nx < world.size() || cfg.ny < world.size() {
        return Err(AppError::Config(format!("grid {}x{} too small for {} ranks", cfg.nx, cfg.ny, world.size())));
    }
    let mut solver = Solver::new(&world, &cfg)?;
    let outcome = solver.run(&cfg)?;
    let centre = solver.probe(cfg.nx / 2, cfg.ny / 2, cfg.nz / 2)?;
    let Some(ours) = solver.gather()? else {
        return Ok(());
    };
    let (want, want_out) = serial_reference(&cfg);
    let max_diff = ours.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0f64, f64::max);
    let want_centre = want[((cfg.nx / 2) * cfg.ny + cfg.ny / 2) * cfg.nz + cfg.nz / 2];
    let same_stop = outcome.iters == want_out.iters && (outcome.residual - want_out.residual).abs() <= 1e-9 * want_out.residual;
    if ours.len() != want.len() || max_diff > 1e-12 || centre != want_centre || !same_stop {
        let what = format!("max |u - u_serial| = {max_diff:e}, centre {centre} vs {want_centre}, stop {outcome:?} vs {want_out:?}");
        return Err(AppError::Check(what));
    }
    let d = &solver.d;
    println!(
        "stencil3d OK: {} {}x{}x{} on {}x{} ranks, {} iterations (residual {:.3e}, {} checks), overlap={}, centre={:.6e}, max diff {:.1e}",
        solver.kernel_name(), cfg.nx, cfg.ny, cfg.nz, d.px, d.py, outcome.iters, outcome.residual,
        solver.history.len(), cfg.overlap, centre, max_diff
    );
    Ok(())
}
