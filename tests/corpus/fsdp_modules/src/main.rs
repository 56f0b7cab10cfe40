//! FSDP-style training of a small MLP, checked against serial training.

mod config;
mod fsdp;
mod model;
mod optim;
mod serial;
mod train;

use dist_runtime::prelude::*;

#[spmd]
fn main(world: Comm<World>) -> Result<(), Box<dyn std::error::Error>> {
    let cfg = config::Config::from_args()?;
    let got = train::train(&world, &cfg)?;
    let want = serial::train(&cfg);
    let mut worst: f64 = 0.0;
    for (g, w) in got.iter().zip(&want) {
        for (a, b) in g.iter().zip(w) {
            worst = worst.max((a - b).abs() / (1.0 + b.abs()));
        }
    }
    if worst > 1e-9 {
        return Err(format!("rank {}: parameters differ from serial training by {worst:e}", world.rank()).into());
    }
    if world.rank() == 0 {
        println!(
            "fsdp over {} ranks, dims {:?}, {} steps, accum {}, clip {:?}: OK (max rel diff {worst:.1e})",
            world.size(),
            cfg.dims,
            cfg.steps,
            cfg.accum,
            cfg.clip
        );
    }
    Ok(())
}
