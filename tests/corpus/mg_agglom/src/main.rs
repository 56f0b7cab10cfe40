//! 1-D Poisson multigrid (V-cycles, weighted Jacobi, full weighting, linear
//! interpolation) with coarse-level agglomeration: once a level would leave some rank
//! with fewer than `--agg-min` points, the level is gathered onto `--coarse-ranks`
//! group leaders, which carry on coarsening among themselves down to a direct solve.
//! Checked against a serial direct solve of the fine system.

mod coarse;
mod config;
mod grid;
mod halo;
mod solver;

use coarse::Agglomerator;
use config::Config;
use dist_runtime::prelude::*;
use grid::{tridiagonal_solve, Level};
use solver::{build_levels, Bottom, Hierarchy};

fn rhs(x: f64) -> f64 {
    let pi = std::f64::consts::PI;
    pi * pi * (pi * x).sin() + 10.0 * x * (1.0 - x) + if x < 0.3 { 2.0 } else { 0.0 }
}

/// Builds the world's hierarchy and, below it, the agglomerated one. Collective.
fn build(world: &Comm<World>, cfg: &Config, fine: Level) -> dist_runtime::Result<Hierarchy<World>> {
    let levels = build_levels(world, fine, cfg.agg_min)?;
    let k = cfg.coarse_ranks.min(world.size());
    let bottom_level = *levels.last().unwrap();
    let bottom = if k < world.size() && bottom_level.m >= 8 {
        let (agg, coarse) = Agglomerator::new(world, &bottom_level, k)?;
        let sub = match (coarse, agg.merged) {
            (Some(c), Some(merged)) => {
                let sub_levels = build_levels(&c, merged, cfg.agg_min)?;
                Some(Box::new(Hierarchy::new(&c, sub_levels, Bottom::Direct, cfg.nu)))
            }
            _ => None,
        };
        Bottom::Agglomerate { agg, sub, cycles: cfg.coarse_cycles }
    } else {
        Bottom::Direct
    };
    Ok(Hierarchy::new(world, levels, bottom, cfg.nu))
}

#[spmd]
fn main(world: Comm<World>) -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let cfg = Config::parse(&args)?;
    let (r, n) = (world.rank(), world.size());
    let m = 1usize << cfg.levels;
    if m - 1 < n * cfg.agg_min {
        return Err(format!("a grid of {} points is too small for {n} ranks of at least {}", m - 1, cfg.agg_min).into());
    }
    let fine = Level::block(m, r, n);
    let hier = build(&world, &cfg, fine)?;

    let mut f = fine.zeros();
    for (i, fi) in f.iter_mut().enumerate().take(fine.count() + 1).skip(1) {
        *fi = rhs(fine.x(i));
    }
    let mut f2 = [f[1..=fine.count()].iter().map(|x| x * x).sum::<f64>()];
    world.all_reduce(&mut f2, ReduceOp::Sum)?;
    let fnorm = f2[0].sqrt();

    let mut u = fine.zeros();
    let mut history = Vec::new();
    for _ in 0..cfg.max_cycles {
        hier.vcycle(0, &mut u, &f)?;
        let res = hier.residual_norm2(&mut u, &f)?.sqrt() / fnorm;
        history.push(res);
        if res < cfg.tol {
            break;
        }
    }

    // Serial reference: the exact discrete solution, on every rank.
    let f_all: Vec<f64> = (1..m).map(|g| rhs(g as f64 / m as f64)).collect();
    let exact = tridiagonal_solve(m, &f_all);
    let err = (fine.lo..fine.hi).map(|g| (u[g - fine.lo + 1] - exact[g - 1]).abs()).fold(0.0, f64::max);
    let mut worst = [err];
    world.all_reduce(&mut worst, ReduceOp::Max)?;

    let last = *history.last().unwrap_or(&f64::NAN);
    if r == 0 {
        if !(last < cfg.tol) || worst[0] > 1e-7 {
            return Err(format!("not converged or wrong: residual {last:.2e} after {} cycles, max error {:.2e}", history.len(), worst[0]).into());
        }
        let rates: Vec<String> = history.windows(2).take(3).map(|w| format!("{:.3}", w[1] / w[0])).collect();
        println!(
            "OK multigrid n={n} m={m} depth={} (world levels {}, coarse ranks {}): {} V-cycles, residual {last:.1e}, max |u - serial| {:.1e}, rates {}",
            hier.depth(), hier.levels.len(), cfg.coarse_ranks.min(n), history.len(), worst[0], rates.join(" ")
        );
    }
    Ok(())
}
