//! Tensor × data parallel training of a layered MLP, checked against one process.
//!
//! cargo spmd run -n 4 -- --tp 2 --config train.cfg

mod config;
mod data;
mod layers;
mod model;
mod serial;

use dist_runtime::prelude::*;

use config::Args;
use data::{batch_rows, shard, Dataset, HIDDEN};
use layers::Tp;
use model::{Dp, EarlyStopping, Model};

type BoxResult<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// The tp degree actually used: the largest one not above the request that divides
/// both the world and the hidden width.
fn effective_tp(requested: usize, world: usize) -> usize {
    (1..=requested.min(world)).rev().find(|t| world % t == 0 && HIDDEN % t == 0).unwrap_or(1)
}

#[spmd]
fn main(world: Comm<World>) -> BoxResult<()> {
    let args = Args::parse()?;
    let cfg = args.config.clone();
    let n = world.size();
    let tp_size = effective_tp(args.tp, n);
    let (dp, tp): (Comm<Dp>, Comm<Tp>) = world.mesh2(n / tp_size, tp_size)?;
    if world.rank() == 0 && tp_size != args.tp {
        println!("tp {} does not fit {n} ranks; using tp {tp_size}", args.tp);
    }

    let train = Dataset::synthetic(256, cfg.seed);
    let valid = Dataset::synthetic(40, cfg.seed + 1);
    let init = data::initial_weights(cfg.seed);
    let mut model = Model::build(dp.clone(), &tp, &init);
    if world.rank() == 0 {
        println!("dp {} x tp {tp_size}: {}", dp.size(), model.describe());
    }

    let mut stopper = EarlyStopping::new(cfg.patience);
    let mut steps_taken = 0;
    for step in 0..cfg.steps {
        model.zero_grad();
        let rows = batch_rows(step, cfg.batch, train.rows);
        let (lo, hi) = shard(rows.len(), dp.size(), dp.rank());
        let mine = &rows[lo..hi];
        for m in 0..cfg.micro_batches {
            let (a, b) = shard(mine.len(), cfg.micro_batches, m);
            let (x, t) = train.select(&mine[a..b]);
            let y = model.forward(&x)?;
            let dy: Vec<f32> = y.iter().zip(&t).map(|(y, t)| y - t).collect();
            model.backward(&dy)?;
        }
        model.all_reduce_grads(1.0 / cfg.batch as f32)?;
        model.sgd(cfg.lr);
        steps_taken += 1;

        if (step + 1) % cfg.eval_every == 0 {
            let val = model.validation_loss(&valid)?;
            if world.rank() == 0 {
                println!("step {:>3}: validation loss {val:.5}", step + 1);
            }
            if stopper.should_stop(val) {
                if world.rank() == 0 {
                    println!("early stop after {steps_taken} steps");
                }
                break;
            }
        }
    }

    // Check every shard against the same training in one process.
    let got = model.full_weights()?;
    let (want, serial_steps) = serial::train(&cfg, &train, &valid, dp.size());
    let mut diff = [got
        .iter()
        .zip(&want)
        .flat_map(|((gw, gb), (ww, wb))| gw.iter().zip(ww).chain(gb.iter().zip(wb)))
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max)];
    world.all_reduce(&mut diff, ReduceOp::Max)?;
    if serial_steps != steps_taken {
        return Err(format!("took {steps_taken} steps, the serial reference {serial_steps}").into());
    }
    if diff[0] > 1e-4 {
        return Err(format!("weights differ from the serial reference by {:.3e}", diff[0]).into());
    }
    if world.rank() == 0 {
        println!("weights match the serial reference (max difference {:.2e}, {steps_taken} steps)", diff[0]);
        println!("OK");
    }
    Ok(())
}
