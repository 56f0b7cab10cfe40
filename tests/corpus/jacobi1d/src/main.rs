//! 1-D steady heat equation -u'' = f on a rod with fixed end temperatures, solved by
//! Jacobi iteration over slabs with halo exchange, and compared point by point with
//! the same iteration run serially.
//!
//! cargo spmd run -n 4 -- --cells 30 --steps 3000 --check-every 10 --tol 1e-5

mod grid;
mod halo;
mod solver;

use dist_runtime::prelude::*;

use solver::Solver;

struct Config {
    cells: usize,
    steps: usize,
    check_every: usize,
    tol: f64,
}

impl Default for Config {
    fn default() -> Self {
        Config { cells: 64, steps: 500, check_every: 10, tol: 1e-6 }
    }
}

fn parse_args() -> Result<Config, String> {
    let mut cfg = Config::default();
    let args: Vec<String> = std::env::args().skip(1).collect();
    for pair in args.chunks(2) {
        let [flag, value] = pair else { return Err(format!("{} needs a value", pair[0])) };
        let bad = || format!("bad value {value:?} for {flag}");
        match flag.as_str() {
            "--cells" => cfg.cells = value.parse().map_err(|_| bad())?,
            "--steps" => cfg.steps = value.parse().map_err(|_| bad())?,
            "--check-every" => cfg.check_every = value.parse().map_err(|_| bad())?,
            "--tol" => cfg.tol = value.parse().map_err(|_| bad())?,
            _ => return Err(format!("unknown argument {flag}")),
        }
    }
    if cfg.check_every == 0 || cfg.steps == 0 {
        return Err("--steps and --check-every must be positive".to_string());
    }
    Ok(cfg)
}

#[spmd]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let cfg = parse_args().map_err(dist_runtime::Error::Env)?;
    if cfg.cells < world.size() {
        return Err(dist_runtime::Error::Env(format!("{} cells for {} ranks", cfg.cells, world.size())));
    }

    let mut solver = Solver::new(&world, cfg.cells);
    let (steps, resid) = solver.run(cfg.steps, cfg.check_every, cfg.tol)?;
    let field = solver.gather(0)?;

    let mut bad = [0u64];
    if let Some(u) = &field {
        let (want, want_steps, want_resid) = grid::serial_solve(cfg.cells, cfg.steps, cfg.check_every, cfg.tol);
        bad[0] = u.iter().zip(&want).filter(|(a, b)| a != b).count() as u64;
        if steps != want_steps || resid != want_resid {
            eprintln!("stopped after {steps} steps at {resid:e}; serial: {want_steps} steps at {want_resid:e}");
            bad[0] += 1;
        }
    }
    world.broadcast(&mut bad, 0)?;
    if bad[0] != 0 {
        return Err(dist_runtime::Error::Mismatch {
            comm: "World".into(),
            msg: format!("Jacobi solution differs from the serial solve at {} points", bad[0]),
        });
    }

    let mut sent = [solver.messages() as u64];
    world.all_reduce(&mut sent, ReduceOp::Sum)?;
    if let Some(u) = field {
        let (lo, hi) = u.iter().fold((f64::MAX, f64::MIN), |(lo, hi), &x| (lo.min(x), hi.max(x)));
        let converged = if resid < cfg.tol { "converged" } else { "not converged" };
        println!(
            "OK jacobi1d: {} ranks, {} cells, {steps} steps ({converged}, residual {resid:.2e}, {} checks), u in [{lo:.4}, {hi:.4}], {} halo messages",
            world.size(),
            cfg.cells,
            solver.history.len(),
            sent[0]
        );
    }
    Ok(())
}
