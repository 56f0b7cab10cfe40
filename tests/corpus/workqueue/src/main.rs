//! A dynamic work queue: rank 0 hands out chunks of task ids to workers that ask for
//! them (any-source receives), collects the results, and checks them against a serial
//! run. `--static` splits the tasks up front instead.

mod config;
mod master;
mod protocol;
mod statics;
mod task;
mod worker;

use config::{Config, Mode};
use dist_runtime::prelude::*;
use master::Master;
use worker::Worker;

type AnyResult<T> = Result<T, Box<dyn std::error::Error>>;

/// The dynamic queue. Returns every value on rank 0 and the tasks this rank ran.
fn dynamic(world: &Comm<World>, cfg: &Config) -> AnyResult<(Option<Vec<f64>>, u64)> {
    if world.rank() == 0 {
        let mut m = Master::new(world, cfg.tasks, cfg.chunk);
        if world.size() == 1 {
            m.run_alone(cfg.seed)?;
        } else {
            m.serve()?;
        }
        if cfg.report {
            for (w, h) in m.handed.iter().enumerate().skip(1) {
                println!("worker {w}: {h} chunks");
            }
        }
        let values: Option<Vec<f64>> = m.results.iter().copied().collect();
        let values = values.ok_or("a task was never reported")?;
        let own = if world.size() == 1 { cfg.tasks } else { 0 };
        Ok((Some(values), own))
    } else {
        let mut w = Worker::new(world, cfg.seed);
        w.run()?;
        Ok((None, w.done))
    }
}

#[spmd]
fn main(world: Comm<World>) -> AnyResult<()> {
    let cfg = Config::parse(std::env::args().skip(1))?;
    let (values, ran) = match cfg.mode {
        Mode::Dynamic => dynamic(&world, &cfg)?,
        Mode::Static => statics::run(&world, cfg.seed, cfg.tasks)?,
    };
    // Every task ran exactly once somewhere.
    let mut total = [ran];
    world.all_reduce(&mut total, ReduceOp::Sum)?;
    if total[0] != cfg.tasks {
        return Err(format!("{} tasks ran, expected {}", total[0], cfg.tasks).into());
    }
    if let Some(values) = values {
        let want = task::serial(cfg.seed, cfg.tasks);
        let wrong = values.iter().zip(&want).filter(|(a, b)| a != b).count();
        if wrong > 0 || values.len() != want.len() {
            return Err(format!("{wrong} results differ from the serial run").into());
        }
        let checksum: f64 = values.iter().sum();
        println!(
            "OK workqueue {:?}: {} tasks in chunks of {} on {} ranks, checksum {checksum:.3}, all match serial",
            cfg.mode,
            cfg.tasks,
            cfg.chunk,
            world.size()
        );
    }
    Ok(())
}
