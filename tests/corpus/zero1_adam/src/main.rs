//! ZeRO-1 data-parallel Adam on a small MLP, checked against serial full-batch Adam.
//!
//! `cargo spmd run -n 4 -- --steps 30 --lr 0.02`

mod config;
mod model;
mod optim;
mod serial;
mod shard;
mod trainer;

use config::Config;
use dist_runtime::prelude::*;
use model::{Dataset, Mlp};
use trainer::Trainer;

const TOL: f64 = 1e-8;

#[derive(Debug)]
struct Mismatch(String);

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Mismatch {}

#[spmd]
fn main(world: Comm<World>) -> Result<(), Box<dyn std::error::Error>> {
    let cfg = Config::from_args()?;
    let model = Mlp { features: cfg.features, hidden: cfg.hidden };
    let data = Dataset::synthetic(cfg.rows, cfg.features, cfg.seed);
    let rank = world.rank();

    let mut trainer = Trainer::builder()
        .lr(cfg.lr)
        .steps(cfg.steps)
        .clip(cfg.clip)
        .model(model)
        .seed(cfg.seed)
        .build(world);
    trainer.train(&data)?;
    let eval = trainer.eval_loss(&data)?;

    let (want, want_losses) = serial::train(model, &data, cfg.steps, cfg.lr, cfg.clip, cfg.seed);
    let dp = serial::max_rel_diff(trainer.params(), &want);
    let dl = serial::max_rel_diff(&trainer.losses, &want_losses);
    let mut scratch = vec![0.0; want.len()];
    let want_eval = model.loss_grad(&want, &data.x, &data.y, data.rows(), &mut scratch);
    let de = serial::max_rel_diff(&[eval], &[want_eval]);

    // Every rank must agree with the reference; the worst one decides.
    let mut worst = [dp.max(dl).max(de)];
    trainer.world().all_reduce(&mut worst, ReduceOp::Max)?;
    if worst[0] > TOL || worst[0].is_nan() {
        return Err(Box::new(Mismatch(format!(
            "rank {rank}: params differ by {dp:e}, losses by {dl:e} (worst over ranks {:e})",
            worst[0]
        ))));
    }
    if rank == 0 {
        println!(
            "{} params, {} rows, {} steps on {} ranks: final loss {:.6} (serial {:.6}), eval {:.6}",
            model.num_params(),
            cfg.rows,
            cfg.steps,
            trainer.world().size(),
            trainer.losses.last().copied().unwrap_or(0.0),
            want_losses.last().copied().unwrap_or(0.0),
            eval
        );
        println!("OK");
    }
    Ok(())
}
