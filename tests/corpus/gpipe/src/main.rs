//! GPipe pipeline parallelism: one layer of an MLP per rank, micro-batches flowing
//! forward and their gradients flowing back between neighbouring stages, the loss
//! broadcast from the last stage; checked against serial training of the whole MLP.
//!
//! cargo spmd run -n 4 -- --width 6 --batch 12 --micro 4 --steps 8

mod layer;
mod pipeline;
mod reference;
mod schedule;

use dist_runtime::prelude::*;

use pipeline::Pipeline;
use reference::{Hyper, batch, dims, layers, micro_rows, train_serial};

fn parse_args() -> Result<(usize, Hyper), String> {
    let mut width = 6;
    let mut h = Hyper { batch: 12, micro: 4, steps: 8, lr: 0.2, clip: 1.0, stop_below: 0.0, seed: 1 };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let flag = args[i].as_str();
        let value = args.get(i + 1).ok_or_else(|| format!("{flag} needs a value"))?;
        let as_usize = || value.parse::<usize>().map_err(|e| format!("{flag}: {e}"));
        let as_f64 = || value.parse::<f64>().map_err(|e| format!("{flag}: {e}"));
        match flag {
            "--width" => width = as_usize()?,
            "--batch" => h.batch = as_usize()?,
            "--micro" => h.micro = as_usize()?,
            "--steps" => h.steps = as_usize()?,
            "--seed" => h.seed = as_usize()? as u64,
            "--lr" => h.lr = as_f64()?,
            "--clip" => h.clip = as_f64()?,
            "--stop-below" => h.stop_below = as_f64()?,
            _ => return Err(format!("unknown flag {flag}")),
        }
        i += 2;
    }
    if h.micro == 0 || h.micro > h.batch {
        return Err(format!("--micro must be in 1..={}", h.batch));
    }
    Ok((width, h))
}

fn max_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(if a.len() == b.len() { 0.0 } else { f64::INFINITY }, f64::max)
}

#[spmd]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let (width, h) = parse_args().map_err(dist_runtime::Error::Env)?;
    let (stage, stages) = (world.rank(), world.size());
    let dims = dims(width, stages);
    let rows = micro_rows(h.batch, h.micro);
    let layer = layers(h.seed, &dims).swap_remove(stage);
    let mut pipe = Pipeline::new(&world, layer, h.micro);
    pipe.check_shapes()?;

    let mut losses = Vec::new();
    for step in 0..h.steps {
        // Stage 0 loads the batch; only the last stage needs the targets.
        let (x, t) = if pipe.sched.is_first() {
            batch(h.seed, step, h.batch, dims[0], dims[stages])
        } else {
            (Vec::new(), Vec::new())
        };
        let targets = pipe.targets(&t, h.batch * dims[stages])?;
        let local_loss = pipe.run(&x, targets.as_deref(), &rows, h.batch)?;
        let norm = pipe.update(h.lr, h.clip)?;
        let loss = pipe.share_loss(local_loss)?;
        if stage == 0 {
            println!("step {step}: loss {loss:.6}, grad norm {norm:.4}");
        }
        losses.push(loss);
        if loss < h.stop_below {
            break;
        }
    }

    // Every stage checks its own layer and the loss curve against the serial run.
    let (model, want_losses) = train_serial(&h, &dims);
    let want = &model[stage];
    let mut err = [max_diff(&pipe.layer.w, &want.w).max(max_diff(&pipe.layer.b, &want.b)).max(max_diff(&losses, &want_losses))];
    world.all_reduce(&mut err, ReduceOp::Max)?;
    if !(err[0] < 1e-10) {
        return Err(dist_runtime::Error::Backend {
            backend: "gpipe",
            msg: format!("stage {stage}: pipeline training differs from serial by {:e}", err[0]),
            source: None,
        });
    }
    if stage == 0 {
        println!(
            "OK gpipe: {stages} stages {:?}, {} micro-batches of {:?}, {} steps, {} transfers per step on stage 0, final loss {:.6}, max diff {:.1e}",
            dims,
            h.micro,
            rows,
            losses.len(),
            pipe.sched.transfers(),
            losses.last().copied().unwrap_or(f64::NAN),
            err[0]
        );
    }
    Ok(())
}
