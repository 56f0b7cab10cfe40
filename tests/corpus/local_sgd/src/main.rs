//! Data-parallel linear regression with local SGD and gradient accumulation.
//!
//! `cargo spmd run -n 4 -- --sync-every 4 --accum 2`

mod cli;
mod model;
mod trainer;

use dist_runtime::prelude::*;
use trainer::Trainer;

fn max_rel_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs() / y.abs().max(1e-3)).fold(0.0, f64::max)
}

#[spmd]
fn main(world: Comm<World>) -> Result<(), String> {
    let cfg = cli::Config::from_env_args()?;
    let err = |e: dist_runtime::Error| e.to_string();
    let (rank, size) = (world.rank(), world.size());

    let mut trainer = Trainer::new(world.clone(), cfg.clone());
    let converged = trainer.train().map_err(err)?;
    let spread = trainer.finalize().map_err(err)?;

    // Every rank replays the whole schedule serially and checks its own copy.
    let reference = model::serial_local_sgd(&cfg, size);
    let params_diff = max_rel_diff(&trainer.model.flat(), &reference.model.flat());
    let loss_diff = max_rel_diff(&trainer.losses, &reference.losses);
    let same_schedule = trainer.steps == reference.steps && trainer.losses.len() == reference.losses.len();
    let good = same_schedule && params_diff < 1e-9 && loss_diff < 1e-9 && spread == 0.0;
    if !good {
        eprintln!(
            "rank {rank}: steps {} vs {}, params differ by {params_diff:.2e}, losses by {loss_diff:.2e}, spread {spread:.2e}",
            trainer.steps, reference.steps
        );
    }
    let mut all_good = [good];
    world.all_reduce(&mut all_good, ReduceOp::Min).map_err(err)?;

    if rank == 0 {
        println!(
            "{size} ranks, {} rows ({} here), batch {} x {} accumulated, averaging every {} steps",
            cfg.rows,
            trainer.local_rows(),
            cfg.batch,
            cfg.accum,
            cfg.sync_every
        );
        let last = trainer.losses.last().copied().unwrap_or(f64::NAN);
        let how = if converged { "reached the target" } else { "ran out of steps" };
        println!("{how} after {} steps, loss {last:.5}; w = {:.3?}, b = {:.3}", trainer.steps, trainer.model.w, trainer.model.b);
        println!("serial replay: params within {params_diff:.1e}, losses within {loss_diff:.1e}");
    }
    if !all_good[0] {
        return Err("local SGD does not match the serial replay".to_string());
    }
    if rank == 0 {
        println!("OK");
    }
    Ok(())
}
