//! A small Megatron-style MLP trainer over a pp × dp × tp mesh, checked against serial
//! training of the same model on every replica's batch.
//!
//! cargo spmd run -n 8 -- --tp 2 --pp 2 --steps 4

mod config;
mod data;
mod layers;
mod model;
mod parallel;
mod serial;
mod tensor;

use config::Config;
use dist_runtime::prelude::*;
use model::StageModel;
use parallel::ParallelState;

type BoxError = Box<dyn std::error::Error>;

#[spmd]
fn main(world: Comm<World>) -> Result<(), BoxError> {
    let cfg = Config::from_args()?;
    if data::F % cfg.tp != 0 || data::BLOCKS % cfg.pp != 0 {
        return Err(format!("--tp must divide {} and --pp must divide {}", data::F, data::BLOCKS).into());
    }
    let ps = ParallelState::builder(&world).tensor_parallel(cfg.tp).pipeline_parallel(cfg.pp).build()?;
    let mut model = StageModel::new(&ps);

    let mut losses = Vec::new();
    for step in 0..cfg.steps {
        let loss = model.train_step(&ps, step)?;
        model.sync_grads(&ps)?;
        model.sgd(cfg.lr);
        // The last stage knows the loss; average it over replicas, then tell every stage.
        let mut l = [loss];
        ps.dp.all_reduce(&mut l, ReduceOp::Avg)?;
        let last = ps.num_stages() - 1;
        ps.pp.broadcast(&mut l, last)?;
        losses.push(l[0]);
    }

    let (reference, serial_losses) = serial::train(ps.dp.size(), cfg.steps, cfg.lr);
    let (diff, worst) = model.compare(&reference);
    let loss_diff = losses.iter().zip(&serial_losses).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
    let mut global = [diff, loss_diff];
    world.all_reduce(&mut global, ReduceOp::Max)?;
    if diff > 1e-4 {
        return Err(format!("rank {}: weights differ from serial by {diff:e} in {worst}", world.rank()).into());
    }
    if global[0] > 1e-4 || global[1] > 1e-4 {
        return Err(format!("weights/loss differ from serial: {global:?}").into());
    }
    if world.rank() == 0 {
        println!(
            "OK: pp={} dp={} tp={} steps={} losses {:?} (max weight diff {:.2e})",
            ps.num_stages(),
            ps.dp.size(),
            ps.tp.size(),
            cfg.steps,
            losses,
            global[0]
        );
    }
    Ok(())
}
