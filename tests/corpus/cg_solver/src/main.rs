//! Distributed conjugate gradients for −u'' = f on (0, 1) with u(0) = u(1) = 0 and a
//! lopsided load f(x) = 1 + 40·x²·sin(3πx),
//! discretised on `n` interior points: rows are block-distributed over the ranks.
//! The solution is checked against serial CG on the same system and against the
//! true residual.
//!
//!     cargo spmd run -n 4 -- --n 203 [--tol 1e-10] [--max-iter 10000] [--log-every 50]

mod dist_vec;
mod poisson;
mod solver;

use dist_runtime::prelude::*;
use std::f64::consts::PI;

use dist_vec::{DistVector, Layout};
use poisson::{apply_serial, Laplacian1d};
use solver::{solve_serial, Solver, SolverConfig};

struct Args {
    n: usize,
    solver: SolverConfig,
}

fn parse_args() -> Args {
    let mut args = Args { n: 203, solver: SolverConfig::default() };
    let argv: Vec<String> = std::env::args().collect();
    let mut i = 1;
    while i < argv.len() {
        let value = argv.get(i + 1).cloned().unwrap_or_default();
        match argv[i].as_str() {
            "--n" => args.n = value.parse().expect("--n takes a row count"),
            "--tol" => args.solver = args.solver.clone().tol(value.parse().expect("--tol takes a number")),
            "--max-iter" => args.solver = args.solver.clone().max_iter(value.parse().expect("--max-iter takes a count")),
            "--log-every" => args.solver = args.solver.clone().log_every(value.parse().expect("--log-every takes a count")),
            other => panic!("unknown argument {other}"),
        }
        i += 2;
    }
    args
}

fn rhs(n: usize) -> impl Fn(usize) -> f64 {
    let h = 1.0 / (n + 1) as f64;
    move |i| {
        let x = (i + 1) as f64 * h;
        h * h * (1.0 + 40.0 * x * x * (3.0 * PI * x).sin())
    }
}

fn failure(msg: String) -> dist_runtime::Error {
    dist_runtime::Error::Mismatch { comm: "World".into(), msg }
}

#[spmd]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let args = parse_args();
    let layout = Layout::new(args.n, world.rank(), world.size());
    let b = DistVector::from_fn(&world, &layout, rhs(args.n));
    let mut x = DistVector::zeros(&world, &layout);

    let solver = Solver::new(Laplacian1d::new(&world), args.solver.clone(), world.rank() == 0);
    let stats = solver.solve(&b, &mut x)?;
    let u = x.gather()?;

    let b_full: Vec<f64> = (0..args.n).map(rhs(args.n)).collect();
    let (want, want_stats) = solve_serial(&b_full, &args.solver);
    let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let diff = u.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max) / scale;
    let res: Vec<f64> = apply_serial(&u).iter().zip(&b_full).map(|(a, b)| a - b).collect();
    let true_rel = (res.iter().map(|v| v * v).sum::<f64>() / b_full.iter().map(|v| v * v).sum::<f64>()).sqrt();

    if !stats.converged || diff > 1e-6 || true_rel > 100.0 * args.solver.tol {
        return Err(failure(format!(
            "rank {}: {stats:?} (serial {want_stats:?}), differs from serial CG by {diff:.3e}, true residual {true_rel:.3e}",
            world.rank()
        )));
    }
    if world.rank() == 0 {
        println!(
            "OK cg_solver ranks={} n={} iters={} serial_iters={} rel_residual={:.2e} diff_vs_serial={diff:.2e}",
            world.size(),
            args.n,
            stats.iters,
            want_stats.iters,
            stats.rel_residual
        );
    }
    Ok(())
}
