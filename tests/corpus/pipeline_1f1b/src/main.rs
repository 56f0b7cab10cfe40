//! 1F1B pipeline training over `P = world size` stages, one tanh layer per stage:
//! `cargo spmd run -n 4 -- --micro 6 --steps 3 [--log-every K]`. The checkpoint gathered
//! on stage 0 and the loss curve are checked against serial training of the stack.

mod math;
mod p2p;
mod schedule;
mod stage;

use dist_runtime::prelude::*;
use stage::PipelineStage;

fn flag(args: &[String], name: &str, default: usize) -> usize {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(|v| v.parse().unwrap_or_else(|_| panic!("{name} takes a number, got {v}")))
        .unwrap_or(default)
}

#[spmd]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let microbatches = flag(&args, "--micro", 4);
    let steps = flag(&args, "--steps", 2);
    let log_every = flag(&args, "--log-every", 2).max(1);
    assert!(microbatches >= 1, "need at least one micro-batch");
    let (rank, stages) = (world.rank(), world.size());

    let mut stage = PipelineStage::new(world.clone(), log_every);
    let mut losses: Vec<f64> = (0..steps).map(|step| stage.train_step(step, microbatches)).collect::<Result<_, _>>()?;
    stage.share_losses(&mut losses)?;

    let (want_w, want_losses) = math::serial(stages, microbatches, steps);
    let mut err = math::max_abs_diff(&losses, &want_losses);
    if let Some(model) = stage.gather_checkpoint()? {
        err = model.iter().zip(&want_w).map(|(a, b)| math::max_abs_diff(a, b)).fold(err, f64::max);
    }
    err = err.max(math::max_abs_diff(&stage.w, &want_w[rank]));
    let mut worst = [err];
    world.all_reduce(&mut worst, ReduceOp::Max)?;
    if !(worst[0] < 1e-9) {
        return Err(dist_runtime::Error::Env(format!("1F1B training differs from serial by {:.3e}", worst[0])));
    }
    if rank == 0 {
        println!(
            "OK pipeline_1f1b ranks={stages} micro={microbatches} steps={steps} final_loss={:.6} max_abs_diff={:.1e}",
            losses.last().copied().unwrap_or(0.0),
            worst[0]
        );
    }
    Ok(())
}
