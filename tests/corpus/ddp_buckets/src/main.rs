//! Data-parallel training of a small MLP with DDP-style gradient buckets, gradient
//! accumulation and early stopping, checked against the same training run serially.
//!
//! cargo spmd run -n 4 -- --batch 10 --accum 2 --bucket-kb 2 --patience 3

mod config;
mod data;
mod ddp;
mod model;
mod train;

use dist_runtime::prelude::*;

use config::Config;

fn failed(msg: String) -> dist_runtime::Error {
    dist_runtime::Error::Mismatch { comm: "World".into(), msg }
}

fn max_rel_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs() / (1.0 + y.abs())).fold(0.0, f64::max)
}

#[spmd]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let cfg = Config::from_args().map_err(dist_runtime::Error::Env)?;
    let data = data::make_splits(cfg.rows_per_epoch(), cfg.val_rows, cfg.seed);

    let dist = train::train_distributed(&world, &cfg, &data)?;
    let serial = train::train_serial(&cfg, &data);

    // Every replica must hold rank 0's weights.
    let mut replica = dist.params.clone();
    world.broadcast(&mut replica, 0)?;
    let drift = max_rel_diff(&dist.params, &replica);
    let err = max_rel_diff(&dist.params, &serial.params);
    let epochs_differ = dist.val_curve.len() != serial.val_curve.len();
    let mut worst = [drift, err, f64::from(u8::from(epochs_differ))];
    world.all_reduce(&mut worst, ReduceOp::Max)?;

    if worst[2] != 0.0 {
        return Err(failed(format!(
            "early stopping differs: {} epochs distributed, {} serial",
            dist.val_curve.len(),
            serial.val_curve.len()
        )));
    }
    if worst[0] > 0.0 || worst[1] > 1e-8 {
        return Err(failed(format!("weights differ: replica drift {:.2e}, vs serial {:.2e}", worst[0], worst[1])));
    }
    let curve_err = max_rel_diff(&dist.val_curve, &serial.val_curve);
    if curve_err > 1e-8 {
        return Err(failed(format!("validation curve differs from serial by {curve_err:.2e}")));
    }
    if world.rank() == 0 {
        let last = dist.val_curve.last().copied().unwrap_or(f64::NAN);
        println!(
            "OK ddp_buckets: {} ranks, {} buckets, stopped after {} of {} epochs, val loss {:.5}, max diff vs serial {:.2e}",
            world.size(),
            dist.buckets,
            dist.val_curve.len(),
            cfg.max_epochs,
            last,
            worst[1]
        );
    }
    Ok(())
}
