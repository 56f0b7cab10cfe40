//! Megatron-style 3-D parallel training of a linear stack: `--tp K --pp P --steps N
//! [--micro M]`, data parallel over the rest of the world. Every rank checks its weight
//! shards, the loss curve and the gradient norms against a serial run of the same
//! training.

mod config;
mod model;
mod parallel;
mod trainer;

use dist_runtime::prelude::*;

use config::Config;
use trainer::Trainer;

#[spmd]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let cfg = Config::from_args();
    let n = world.size();
    assert!(
        cfg.tp >= 1 && cfg.pp >= 1 && n % (cfg.tp * cfg.pp) == 0,
        "world size {n} is not a multiple of tp × pp = {} × {}",
        cfg.tp,
        cfg.pp
    );
    assert!(cfg.pp <= model::LAYERS, "at most {} pipeline stages (one layer each)", model::LAYERS);
    let dp = cfg.dp(n);

    let mut trainer = Trainer::new(&world, cfg.clone())?;
    let mut last = 0.0;
    for step in 0..cfg.steps {
        last = trainer.train_step(step)?;
    }

    let want = model::serial_reference(&cfg, dp);
    let mut worst = [trainer.compare(&want)];
    world.all_reduce(&mut worst, ReduceOp::Max)?;
    if worst[0] > cfg.tol {
        return Err(dist_runtime::Error::Env(format!(
            "rank {}: parallel training differs from serial by {:.3e} (tolerance {:.1e})",
            world.rank(),
            worst[0],
            cfg.tol
        )));
    }
    if world.rank() == 0 {
        println!(
            "OK megatron ranks={n} {} steps={} micro={} loss={last:.6} max_rel_diff={:.2e}",
            trainer.layout(),
            cfg.steps,
            cfg.micro_batches,
            worst[0]
        );
    }
    Ok(())
}
