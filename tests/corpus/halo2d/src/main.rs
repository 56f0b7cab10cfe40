//! 2-D heat equation (Jacobi iteration of the 5-point Laplacian) on a `px × py` process
//! grid with halo exchange. The domain's top edge is hot, its left edge warm; the run
//! stops after `--iters` sweeps or once the global residual (checked every
//! `--check-every` sweeps) falls below `--tol`. The field, the residual history and
//! the global metrics are compared with the same iteration run serially.
//!
//!     cargo spmd run -n 4 -- --nx 40 --ny 30 --iters 60 [--px 4] [--check-every 5] [--tol 1e-3]

mod field;
mod grid;
mod halo;
mod stats;

use dist_runtime::prelude::*;

use field::Field;
use grid::Grid;
use halo::Exchanger;
use stats::Metrics;

#[derive(Clone, Debug)]
struct Problem {
    nx: usize,
    ny: usize,
    iters: usize,
    check_every: usize,
    tol: f64,
    px: Option<usize>,
}

impl Default for Problem {
    fn default() -> Self {
        Problem { nx: 40, ny: 30, iters: 60, check_every: 5, tol: 0.0, px: None }
    }
}

impl Problem {
    fn from_args() -> Self {
        let mut p = Problem::default();
        let args: Vec<String> = std::env::args().skip(1).collect();
        for pair in args.chunks(2) {
            let val = pair.get(1).map(String::as_str).unwrap_or("");
            let num = || val.parse::<usize>().unwrap_or_else(|_| panic!("{} wants a number, got {val:?}", pair[0]));
            match pair[0].as_str() {
                "--nx" => p.nx = num(),
                "--ny" => p.ny = num(),
                "--iters" => p.iters = num(),
                "--check-every" => p.check_every = num().max(1),
                "--px" => p.px = Some(num()),
                "--tol" => p.tol = val.parse().expect("--tol wants a float"),
                other => panic!("unknown flag {other}"),
            }
        }
        p
    }
}

/// What a run produces: sweeps done and the residual at each check.
struct History {
    sweeps: usize,
    residuals: Vec<f64>,
}

struct Simulation {
    grid: Grid,
    field: Field,
    halo: Exchanger,
}

impl Simulation {
    fn new(world: &Comm<World>, p: &Problem) -> Self {
        let grid = Grid::new(world.rank(), world.size(), p.nx, p.ny, p.px);
        let field = Field::new(grid.rows.clone(), grid.cols.clone(), p.nx, p.ny);
        let halo = Exchanger::new(world.clone(), grid.nbr);
        Simulation { grid, field, halo }
    }

    fn run(&mut self, p: &Problem) -> dist_runtime::Result<History> {
        let mut hist = History { sweeps: 0, residuals: Vec::new() };
        for it in 0..p.iters {
            self.halo.exchange(&mut self.field)?;
            let sq = self.field.sweep();
            hist.sweeps = it + 1;
            if (it + 1) % p.check_every == 0 {
                let res = self.halo.residual(sq)?;
                hist.residuals.push(res);
                if res < p.tol {
                    break;
                }
            }
        }
        Ok(hist)
    }
}

fn serial(p: &Problem) -> (Field, History) {
    let mut f = Field::new(0..p.ny, 0..p.nx, p.nx, p.ny);
    let mut hist = History { sweeps: 0, residuals: Vec::new() };
    for it in 0..p.iters {
        let sq = f.sweep();
        hist.sweeps = it + 1;
        if (it + 1) % p.check_every == 0 {
            hist.residuals.push(sq.sqrt());
            if sq.sqrt() < p.tol {
                break;
            }
        }
    }
    (f, hist)
}

fn wrong(msg: String) -> dist_runtime::Error {
    dist_runtime::Error::Mismatch { comm: "World".into(), msg }
}

#[spmd]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let p = Problem::from_args();
    let mut sim = Simulation::new(&world, &p);
    let hist = sim.run(&p)?;

    let (want, want_hist) = serial(&p);
    let g = &sim.grid;
    let mut local_err = 0.0f64;
    for i in 0..g.height() {
        for j in 0..g.width() {
            let d = (sim.field.get(i, j) - want.get(g.rows.start + i, g.cols.start + j)).abs();
            local_err = local_err.max(d);
        }
    }

    let mut metrics = Metrics::default();
    metrics.record("field_err", local_err, ReduceOp::Max);
    metrics.record("heat", sim.field.interior().sum(), ReduceOp::Sum);
    metrics.record("coldest", sim.field.interior().fold(f64::INFINITY, f64::min), ReduceOp::Min);
    metrics.record("messages", sim.halo.messages as f64, ReduceOp::Sum);
    metrics.reduce(&world)?;

    let want_heat: f64 = want.interior().sum();
    let want_cold = want.interior().fold(f64::INFINITY, f64::min);
    let res_ok = hist.sweeps == want_hist.sweeps
        && hist.residuals.len() == want_hist.residuals.len()
        && hist.residuals.iter().zip(&want_hist.residuals).all(|(a, b)| (a - b).abs() <= 1e-9 * b.max(1e-300));
    if metrics.get("field_err") > 1e-12
        || (metrics.get("heat") - want_heat).abs() > 1e-9 * want_heat
        || metrics.get("coldest") != want_cold
        || !res_ok
    {
        return Err(wrong(format!(
            "rank {}: field err {:.3e}, heat {} vs {want_heat}, coldest {} vs {want_cold}, residuals {:?} vs {:?}",
            world.rank(),
            metrics.get("field_err"),
            metrics.get("heat"),
            metrics.get("coldest"),
            hist.residuals,
            want_hist.residuals
        )));
    }
    if world.rank() == 0 {
        println!(
            "OK halo2d ranks={} grid={}x{} domain={}x{} sweeps={} residual={:.3e} heat={:.6} messages={}",
            world.size(),
            g.px,
            g.py,
            p.nx,
            p.ny,
            hist.sweeps,
            hist.residuals.last().copied().unwrap_or(f64::NAN),
            metrics.get("heat"),
            metrics.get("messages")
        );
    }
    Ok(())
}
