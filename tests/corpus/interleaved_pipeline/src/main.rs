//! Pipeline-parallel training of a stack of `ranks × chunks` tanh layers (sharing one
//! bias vector) with the interleaved 1F1B schedule, checked against serial training.
//!
//! `cargo spmd run -n 4 -- --micro 8 --chunks 2 --steps 3 --in-dim 5`

mod config;
mod engine;
mod model;
mod reference;
mod schedule;

use config::Config;
use dist_runtime::prelude::*;
use engine::Stage;
use reference::train_serial;

fn max_rel_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs() / y.abs().max(1.0)).fold(0.0, f64::max)
}

#[spmd]
fn main(world: Comm<World>) -> Result<(), String> {
    let cfg = Config::parse(std::env::args().skip(1))?;
    let err = |e: dist_runtime::Error| e.to_string();
    let mut stage = Stage::new(&world, &cfg);
    let sched = schedule::build(world.rank(), stage.place, cfg.micro)?;
    for step in 0..cfg.steps {
        stage.train_step(&sched, step).map_err(err)?;
    }
    let curve = stage.share_losses().map_err(err)?;

    // Every rank checks its own chunks against the serial run; rank 0 hears the worst.
    let want = train_serial(&cfg, stage.place.stages());
    let mut worst = max_rel_diff(&stage.bias, &want.bias);
    for (c, layer) in stage.layers.iter().enumerate() {
        let s = stage.place.stage(world.rank(), c);
        worst = worst.max(max_rel_diff(&layer.w, &want.layers[s].w));
    }
    let mut worst_all = [worst];
    world.reduce(&mut worst_all, ReduceOp::Max, 0).map_err(err)?;
    if world.rank() == 0 {
        let loss_diff = max_rel_diff(&curve, &want.losses);
        if worst_all[0] > 1e-9 || loss_diff > 1e-9 || curve.len() != want.losses.len() {
            return Err(format!("pipeline differs from serial training: weights {:e}, losses {loss_diff:e}", worst_all[0]));
        }
        println!(
            "interleaved_pipeline OK: {:?} over {} ranks x {} chunks = {} stages, {} micro-batches, losses {:?}, max rel diff {:.1e}",
            sched.kind, world.size(), cfg.chunks, stage.place.stages(), cfg.micro,
            curve.iter().map(|l| (l * 1e4).round() / 1e4).collect::<Vec<_>>(), worst_all[0]
        );
    }
    Ok(())
}
