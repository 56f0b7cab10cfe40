//! A sharded embedding table trained with sparse updates: rank r owns the rows with
//! `row % n == r`; each step every rank draws a mini-batch of row ids, asks their
//! owners for the rows (all_to_all of counts, then all_to_all_v or point-to-point),
//! computes a toy loss, and sends the sparse gradients back for the owners' optimizer.
//! The table and the loss curve are checked against one process doing the same.
//!
//! `cargo spmd run -n 4 -- --steps 30 --batch 24 [--p2p] [--sgd]`

mod cli;
mod data;
mod exchange;
mod optim;
mod serial;
mod shard;
mod trainer;

use cli::{Config, OptimKind};
use dist_runtime::prelude::*;
use optim::{Adagrad, Optimizer, Sgd};
use std::error::Error;

const TOL: f32 = 1e-5;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= f64::from(TOL) * (1.0 + b.abs())
}

/// Trains, then compares this rank's rows and the loss curve with the serial run.
/// Returns (first loss, last loss, remote lookups of this rank).
fn run<O: Optimizer>(world: &Comm<World>, cfg: &Config, opt: O) -> Result<(f64, f64, usize), Box<dyn Error>> {
    let name = opt.name();
    let mut trainer = trainer::Trainer::new(world, cfg, opt.clone());
    let mut losses = Vec::with_capacity(cfg.steps);
    for step in 0..cfg.steps {
        let loss = trainer.step(step)?;
        if cfg.log_every > 0 && step % cfg.log_every == 0 && world.rank() == 0 {
            println!("step {step:>4}  loss {loss:.6}  ({name})");
        }
        losses.push(loss);
    }

    let reference = serial::train(cfg, world.size(), opt);
    let mut worst = 0.0f32;
    for (id, row) in trainer.shard.owned() {
        let want = &reference.table[id as usize * cfg.dim..(id as usize + 1) * cfg.dim];
        for (a, b) in row.iter().zip(want) {
            worst = worst.max((a - b).abs() / (1.0 + b.abs()));
        }
    }
    let curve_ok = losses.len() == reference.losses.len() && losses.iter().zip(&reference.losses).all(|(a, b)| close(*a, *b));
    let mut flags = [f64::from(worst), if curve_ok { 0.0 } else { 1.0 }];
    world.all_reduce(&mut flags, ReduceOp::Max)?;
    if flags[0] > f64::from(TOL) || flags[1] != 0.0 {
        return Err(format!(
            "rank {}: table differs from the serial run by {:e} (tolerance {TOL:e}), loss curve {}",
            world.rank(),
            flags[0],
            if flags[1] == 0.0 { "matches" } else { "differs" }
        )
        .into());
    }
    let first = losses.first().copied().unwrap_or(0.0);
    let last = losses.last().copied().unwrap_or(0.0);
    Ok((first, last, trainer.remote_lookups))
}

#[spmd]
fn main(world: Comm<World>) -> Result<(), Box<dyn Error>> {
    let cfg = Config::parse(std::env::args().skip(1))?;
    let (first, last, lookups) = match cfg.optim {
        OptimKind::Sgd => run(&world, &cfg, Sgd { lr: cfg.lr })?,
        OptimKind::Adagrad => run(&world, &cfg, Adagrad::new(cfg.lr))?,
    };
    if cfg.steps > 1 && last >= first {
        return Err(format!("the loss did not go down: {first} -> {last}").into());
    }
    let mut lookups = [lookups as u64];
    world.reduce(&mut lookups, ReduceOp::Sum, 0)?;
    if world.rank() == 0 {
        println!(
            "sparse_embed OK: {} ranks, {:?}/{:?}, {} rows x {}, {} steps, loss {first:.5} -> {last:.5}, {} remote lookups, matches serial",
            world.size(),
            cfg.mode,
            cfg.optim,
            cfg.rows,
            cfg.dim,
            cfg.steps,
            lookups[0]
        );
    }
    Ok(())
}
