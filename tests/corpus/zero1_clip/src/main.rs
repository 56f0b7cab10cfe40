//! ZeRO-1 data-parallel Adam training of a small MLP, checked against serial Adam.
//!
//! `cargo spmd run -n 4 -- --accum 2 --clip 0.5 --ckpt-every 3 --layout ragged`

mod config;
mod model;
mod optim;
mod zero;

use config::Config;
use dist_runtime::prelude::*;
use model::{micro_batch, shard, Dataset, Mlp};
use zero::ZeroTrainer;

fn err(e: dist_runtime::Error) -> String {
    e.to_string()
}

fn max_diff(a: &[f64], b: &[f64]) -> f64 {
    if a.len() != b.len() {
        return f64::INFINITY;
    }
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max)
}

#[spmd]
fn main(world: Comm<World>) -> Result<(), String> {
    let cfg = Config::from_args(std::env::args().skip(1))?;
    let (n, me) = (world.size(), world.rank());
    let model = Mlp::new(cfg.inputs, cfg.hidden);
    let data = Dataset::synthetic(cfg.rows, cfg.inputs, cfg.seed);
    let reference = optim::serial_train(&cfg, &model, &data);

    let mut trainer = ZeroTrainer::new(&world, &cfg, model.init(cfg.seed));
    let scale = 1.0 / cfg.rows as f64;
    let mut losses = Vec::new();
    for step in 0..cfg.steps {
        let mut grad = vec![0.0; model.num_params()];
        let mut local_loss = 0.0;
        for k in 0..cfg.accum {
            // Each micro-batch's rows are split across the data-parallel ranks.
            let mb = micro_batch(cfg.rows, cfg.accum, k);
            let (lo, hi) = shard(mb.len(), n, me);
            local_loss += model.accumulate(&trainer.params, &data, mb.start + lo..mb.start + hi, scale, &mut grad);
        }
        let loss = trainer.global_loss(local_loss).map_err(err)?;
        losses.push(loss);
        if loss < cfg.tol {
            break;
        }
        trainer.step(&grad).map_err(err)?;
        if cfg.ckpt_every > 0 && (step + 1) % cfg.ckpt_every == 0 {
            trainer.checkpoint().map_err(err)?;
        }
    }

    let tol = 1e-9;
    let mut problems = Vec::new();
    let d = max_diff(&trainer.params, &reference.params);
    if d > tol {
        problems.push(format!("rank {me}: parameters differ from serial Adam by {d:e}"));
    }
    let d = max_diff(&losses, &reference.losses);
    if d > tol {
        problems.push(format!("rank {me}: loss curve differs by {d:e}"));
    }
    if me == 0 {
        if trainer.checkpoints.len() != reference.checkpoints.len() {
            problems.push(format!("{} checkpoints, expected {}", trainer.checkpoints.len(), reference.checkpoints.len()));
        }
        for (i, (c, r)) in trainer.checkpoints.iter().zip(&reference.checkpoints).enumerate() {
            let d = max_diff(c, r);
            if d > tol {
                problems.push(format!("checkpoint {i} differs by {d:e}"));
            }
        }
    }
    let mut bad = [problems.len() as u32];
    world.all_reduce(&mut bad, ReduceOp::Sum).map_err(err)?;
    if !problems.is_empty() {
        return Err(problems.join("; "));
    }
    if bad[0] != 0 {
        return Err(format!("rank {me}: {} problems on other ranks", bad[0]));
    }
    if me == 0 {
        println!(
            "zero_adam: {} params over {n} ranks ({:?}), {} steps, loss {:.5} -> {:.5}, {} checkpoints: OK",
            model.num_params(),
            cfg.layout,
            losses.len(),
            losses.first().copied().unwrap_or(0.0),
            losses.last().copied().unwrap_or(0.0),
            trainer.checkpoints.len()
        );
    }
    Ok(())
}
