//! Pipeline-parallel training of a small tanh MLP over micro-batches (GPipe or 1F1B),
//! with optional data-parallel replicas, checked against serial training.

mod config;
mod data;
mod model;
mod p2p;
mod schedule;
mod serial;
mod topology;

use config::Config;
use dist_runtime::prelude::*;
use model::{stage_layers, Stage};
use schedule::Trainer;
use topology::Topology;

fn max_rel_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs() / y.abs().max(1e-3)).fold(0.0, f64::max)
}

#[spmd]
fn main(world: Comm<World>) -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let cfg = Config::parse(&args)?;
    let topo = Topology::new(&world, cfg.dp)?;
    if cfg.layers < topo.stages() {
        return Err(format!("{} layers cannot fill {} stages", cfg.layers, topo.stages()));
    }
    let (first, count) = stage_layers(cfg.layers, topo.stages(), topo.stage());
    let stage = Stage::new(first, count, cfg.rows, cfg.width, cfg.micro);
    let mut trainer = Trainer::new(&topo, &cfg, stage);
    let mut losses = Vec::with_capacity(cfg.steps);
    for _ in 0..cfg.steps {
        losses.push(trainer.train_step().map_err(|e| e.to_string())?);
    }

    // Check every stage's layers and the loss curve against one process's training.
    let reference = serial::train(&cfg);
    let mut worst = trainer
        .stage
        .weights
        .iter()
        .enumerate()
        .map(|(k, w)| max_rel_diff(w, &reference.weights[trainer.stage.first + k]))
        .fold(0.0, f64::max);
    worst = worst.max(max_rel_diff(&losses, &reference.losses));
    let mut all = [worst];
    world.all_reduce(&mut all, ReduceOp::Max).map_err(|e| e.to_string())?;
    if all[0] > 1e-9 {
        return Err(format!("rank {}: weights or losses differ from serial by {:.3e}", world.rank(), all[0]));
    }
    if world.rank() == 0 {
        println!(
            "OK pipe_mlp {:?}: {} stages x {} replicas, {} micro-batches, {} layers; final loss {:.6} (serial {:.6}); max rel diff {:.2e}",
            cfg.schedule,
            topo.stages(),
            cfg.dp,
            cfg.micro,
            cfg.layers,
            losses.last().copied().unwrap_or(0.0),
            reference.losses.last().copied().unwrap_or(0.0),
            all[0]
        );
    }
    Ok(())
}
