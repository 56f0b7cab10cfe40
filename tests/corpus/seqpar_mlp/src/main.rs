//! Megatron-style sequence + tensor parallel MLP training on a dp × tp mesh, checked
//! against the same training in one process.

mod config;
mod model;
mod parallel;
mod reference;
mod trainer;

use dist_runtime::prelude::*;

use config::Config;
use parallel::ParallelState;
use trainer::Trainer;

fn max_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max)
}

#[spmd]
fn main(world: Comm<World>) -> Result<(), Box<dyn std::error::Error>> {
    let cfg = Config::from_args()?;
    let tp = cfg.tp_for(world.size());
    let ps = ParallelState::new(world, tp)?;
    let mut trainer = Trainer::new(cfg.clone(), ps)?;
    trainer.train()?;
    let weights = trainer.gather_weights()?;
    if !trainer.is_world_root() {
        return Ok(());
    }
    let (w1t, w2) = weights.ok_or("world rank 0 is tp rank 0 and holds the weights")?;
    let (want, want_losses) = reference::train(&cfg, trainer.replicas());
    let d = [
        max_diff(&w1t, &want.w1t),
        max_diff(&w2, &want.w2),
        max_diff(trainer.output_bias(), &want.b2),
        max_diff(&trainer.losses, &want_losses),
    ];
    if d.iter().any(|&x| !(x < 1e-9)) {
        return Err(format!("differs from one-process training: w1 {:.2e}, w2 {:.2e}, b2 {:.2e}, loss {:.2e}", d[0], d[1], d[2], d[3]).into());
    }
    let first = trainer.losses.first().copied().unwrap_or(f64::NAN);
    let last = trainer.losses.last().copied().unwrap_or(f64::NAN);
    println!(
        "seqpar OK: mesh {}, seq {}, loss {first:.6} -> {last:.6}, max diff {:.2e}",
        trainer.mesh(),
        cfg.seq,
        d.iter().cloned().fold(0.0, f64::max)
    );
    Ok(())
}
