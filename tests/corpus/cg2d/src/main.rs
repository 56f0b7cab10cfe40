//! Distributed conjugate gradient for the 5-point Laplacian on a 2-D block
//! decomposition, checked against a serial CG.

mod config;
mod decomp;
mod halo;
mod serial;
mod solver;

use config::Config;
use decomp::Decomp;
use dist_runtime::prelude::*;

type AnyResult<T> = Result<T, Box<dyn std::error::Error>>;

/// Collects every rank's block on rank 0 and lays it out as the global mesh.
fn gather_solution(d: &Decomp, local: &[f64]) -> dist_runtime::Result<Option<Vec<f64>>> {
    let counts = d.counts();
    if d.world.rank() == 0 {
        let mut all = vec![0.0; counts.iter().sum()];
        d.world.gather_v(local, Some(&mut all[..]), &counts, 0)?;
        let mut global = vec![0.0; d.nx * d.ny];
        let mut off = 0;
        for (r, &c) in counts.iter().enumerate() {
            let (x0, lnx) = decomp::block(d.nx, d.px, r % d.px);
            let (y0, lny) = decomp::block(d.ny, d.py, r / d.px);
            debug_assert_eq!(c, lnx * lny);
            for (k, v) in all[off..off + c].iter().enumerate() {
                global[(y0 + k / lnx) * d.nx + x0 + k % lnx] = *v;
            }
            off += c;
        }
        Ok(Some(global))
    } else {
        d.world.gather_v(local, None, &counts, 0)?;
        Ok(None)
    }
}

#[spmd]
fn main(world: Comm<World>) -> AnyResult<()> {
    let cfg = Config::from_args(std::env::args().skip(1))?;
    let (px, py) = cfg.process_grid(world.size())?;
    let d = Decomp::new(&world, cfg.nx, cfg.ny, px, py)?;
    let out = solver::cg(&d, &cfg)?;
    let global = gather_solution(&d, &out.x)?;
    if let Some(x) = global {
        let reference = serial::solve(cfg.nx, cfg.ny, cfg.max_iter, cfg.tol);
        let scale = reference.x.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let err = x.iter().zip(&reference.x).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max) / scale;
        if err > 1e-6 || out.iterations.abs_diff(reference.iterations) > 2 {
            return Err(format!(
                "mismatch: max rel diff {err:.3e}, iterations {} vs serial {}",
                out.iterations, reference.iterations
            )
            .into());
        }
        println!(
            "OK cg2d {}x{} on {px}x{py} ranks ({:?}/{:?}): {} iterations (serial {}), |r|/|b| {:.2e}, max rel diff {err:.2e}",
            cfg.nx, cfg.ny, cfg.halo, cfg.dot, out.iterations, reference.iterations, out.residual
        );
    }
    Ok(())
}
