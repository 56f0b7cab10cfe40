//! Pipeline-parallel training (GPipe or 1F1B) with data-parallel replicas and an
//! embedding tied between the first and the last stage, checked against serial training.

mod args;
mod model;
mod schedule;
mod serial;
mod stage;

use dist_runtime::prelude::*;
use stage::{Dp, Pp, Stage};

fn rel_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs() / (1.0 + y.abs())).fold(0.0, f64::max)
}

#[spmd]
fn main(world: Comm<World>) -> Result<(), Box<dyn std::error::Error>> {
    let args = args::parse()?;
    let n = world.size();
    let pp = args.pp.unwrap_or(n);
    if pp == 0 || n % pp != 0 {
        if world.rank() == 0 {
            println!("--pp {pp} does not divide the world size {n}: this configuration cannot run here, skipping");
        }
        return Ok(());
    }
    let replicas = n / pp;
    let (dp, ppc) = world.mesh2::<Dp, Pp>(replicas, pp)?;
    let mut stage = Stage::new(ppc, dp, &args)?;
    let plan = schedule::build(args.schedule, stage.s, pp, args.micro);
    for _ in 0..args.steps {
        stage.run(&plan)?;
    }

    let (e, ws) = serial::train(pp, replicas, args.micro, args.steps);
    let mut diff = rel_diff(&stage.w, &ws[stage.s]);
    if let Some(mine) = &stage.emb {
        diff = diff.max(rel_diff(mine, &e));
    }
    let mut worst = [diff];
    world.all_reduce(&mut worst, ReduceOp::Max)?;
    if worst[0] > 1e-9 {
        return Err(format!("rank {}: weights differ from serial training by {:e}", world.rank(), worst[0]).into());
    }
    if world.rank() == 0 {
        println!(
            "pipeline {:?}: {pp} stages x {replicas} replicas, {} micro-batches, {} steps: OK (max rel diff {:.1e})",
            args.schedule, args.micro, args.steps, worst[0]
        );
    }
    Ok(())
}
