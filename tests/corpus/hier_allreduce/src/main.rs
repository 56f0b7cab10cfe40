//! Data-parallel training of a small MLP with hierarchical gradient all-reduce,
//! checked against the same training in one process.

mod config;
mod model;
mod report;
mod sync;
mod trainer;

use config::Config;
use dist_runtime::prelude::*;
use sync::{GradSync, SyncMode};

fn failure(msg: String) -> dist_runtime::Error {
    dist_runtime::Error::Mismatch { comm: "World".into(), msg }
}

#[spmd]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let cfg = Config::from_env_and_args(&args).map_err(dist_runtime::Error::Env)?;
    let mode = if cfg.flat {
        SyncMode::Flat
    } else {
        SyncMode::Hierarchical { local_size: cfg.effective_local_size(world.size()) }
    };
    let sync = GradSync::new(&world, mode)?;
    if world.rank() == 0 {
        println!("{} ranks, {}; {} steps × {} micro-batches of {}", world.size(), sync.describe(), cfg.steps, cfg.accum, cfg.micro);
    }

    let got = trainer::Trainer::new(&cfg, &world, sync).run()?;
    let want = trainer::serial(&cfg, world.size());

    if got.steps_run != want.steps_run {
        return Err(failure(format!(
            "rank {} ran {} steps, serial ran {}",
            world.rank(),
            got.steps_run,
            want.steps_run
        )));
    }
    let worst = got
        .model
        .params
        .iter()
        .zip(&want.model.params)
        .map(|(a, b)| (a - b).abs() / (1.0 + b.abs()))
        .fold(0.0f64, f64::max);
    if worst > 1e-9 {
        return Err(failure(format!("rank {}: parameters differ from serial by {worst:e}", world.rank())));
    }
    let loss_ok = got.history.len() == want.history.len()
        && got.history.iter().zip(&want.history).all(|(a, b)| a.0 == b.0 && (a.1 - b.1).abs() <= 1e-9 * (1.0 + b.1.abs()));
    if !loss_ok {
        return Err(failure(format!("rank {}: loss curve {:?} != serial {:?}", world.rank(), got.history, want.history)));
    }
    if world.rank() == 0 {
        let last = want.history.last().map(|h| h.1).unwrap_or(f64::NAN);
        println!("OK: {} steps, final loss {last:.6}, max rel param diff {worst:.2e}", got.steps_run);
    }
    Ok(())
}
