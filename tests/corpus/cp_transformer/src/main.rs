//! A tiny context-parallel × data-parallel linear-attention model on a (dp × cp) mesh,
//! early-stopped on the all-reduced validation loss, checked against serial training.

mod config;
mod model;
mod reference;
mod trainer;

use config::Config;
use dist_runtime::prelude::*;
use trainer::Trainer;

fn err(e: dist_runtime::Error) -> String {
    e.to_string()
}

fn max_rel_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs() / y.abs().max(1e-6)).fold(0.0, f64::max)
}

#[spmd]
fn main(world: Comm<World>) -> Result<(), String> {
    let cfg = Config::from_env_and_args()?;
    let mut trainer = Trainer::new(&world, cfg.clone()).map_err(err)?;
    let (dp, cp) = (trainer.dp.size(), trainer.cp.size());
    let mut steps_run = cfg.steps;
    let mut history = Vec::new();
    for step in 0..cfg.steps {
        let (loss, norm) = trainer.step(step).map_err(err)?;
        if (step + 1) % cfg.eval_every != 0 {
            continue;
        }
        let (local_val, val) = trainer.validate().map_err(err)?;
        history.push(val);
        if world.rank() == 0 && cfg.verbose {
            println!("step {:>3}: loss {loss:.6} grad-norm {norm:.4} val {val:.6} (local {local_val:.6})", step + 1);
        }
        if trainer.should_stop(val) {
            steps_run = step + 1;
            break;
        }
    }

    let want = reference::train(&cfg, dp, cp);
    let mut worst = [max_rel_diff(&trainer.params, &want.params).max(max_rel_diff(&history, &want.val_history))];
    world.all_reduce(&mut worst, ReduceOp::Max).map_err(err)?;
    let ok = worst[0] < 1e-8 && steps_run == want.steps && history.len() == want.val_history.len();
    if world.rank() == 0 {
        let last_val = history.last().copied().unwrap_or(f64::NAN);
        let verdict = if ok { "OK" } else { "MISMATCH" };
        println!("cp_transformer: mesh {dp} (dp) x {cp} (cp), sequence {}, {steps_run} steps (serial {}), final val {last_val:.6}, \
                  last prediction {:.4?}, max rel diff {:.2e}: {verdict}", cfg.seq, want.steps, &trainer.last_pred[..2.min(cfg.dim)], worst[0]);
    }
    if !ok {
        return Err(format!("rank {}: training differs from the serial run ({:.3e})", world.rank(), worst[0]));
    }
    Ok(())
}
