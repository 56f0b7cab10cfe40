//! Parameter averaging (local SGD / FedAvg) over hand-written tree and ring collectives,
//! each checked against dist's own collective and the whole run against a serial one.
//!
//! cargo spmd run -n 5 -- --root 2 --rounds 6

mod config;
mod local_sgd;
mod mycoll;

use dist_runtime::prelude::*;

use config::Config;
use local_sgd::{init_params, local_steps, make_shard};
use mycoll::MyColl;

fn wrong(what: &str, got: &[f64], want: &[f64], tol: f64) -> dist_runtime::Result<()> {
    let worst = got.iter().zip(want).map(|(a, b)| (a - b).abs() / (1.0 + b.abs())).fold(0.0, f64::max);
    if got.len() != want.len() || worst > tol {
        return Err(dist_runtime::Error::Mismatch {
            comm: "World".into(),
            msg: format!("{what}: differs from the reference by {worst:.3e} (tolerance {tol:.0e})"),
        });
    }
    Ok(())
}

/// The same rounds in one process: every rank's local steps, then the plain mean.
fn serial_fedavg(cfg: &Config, n: usize) -> Vec<f64> {
    let shards: Vec<_> = (0..n).map(|k| make_shard(k, cfg.rows, cfg.dim, cfg.seed)).collect();
    let mut w = init_params(cfg.dim, cfg.seed);
    for _ in 0..cfg.rounds {
        let mut sum = vec![0.0; cfg.dim];
        for shard in &shards {
            let mut local = w.clone();
            local_steps(&mut local, shard, cfg.local_steps, cfg.lr);
            sum.iter_mut().zip(&local).for_each(|(s, x)| *s += x);
        }
        w = sum.iter().map(|s| s / n as f64).collect();
    }
    w
}

#[spmd]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let cfg = Config::from_args().map_err(dist_runtime::Error::Env)?;
    let (r, n) = (world.rank(), world.size());
    let root = cfg.root % n;
    let coll = MyColl::new(world.clone());

    // The root initialises; everyone gets its parameters down the binomial tree.
    let mut w = if r == root { init_params(cfg.dim, cfg.seed) } else { vec![0.0; cfg.dim] };
    let mut expect = w.clone();
    coll.broadcast(&mut w, root)?;
    world.broadcast(&mut expect, root)?;
    wrong("tree broadcast", &w, &expect, 0.0)?;

    let shard = make_shard(r, cfg.rows, cfg.dim, cfg.seed);
    let mut mean_losses = Vec::with_capacity(cfg.rounds);
    for _round in 0..cfg.rounds {
        let loss = local_steps(&mut w, &shard, cfg.local_steps, cfg.lr);

        let mut sum = w.clone();
        coll.all_reduce_sum(&mut sum)?;
        let mut expect = w.clone();
        world.all_reduce(&mut expect, ReduceOp::Sum)?;
        wrong("butterfly all_reduce", &sum, &expect, 1e-12)?;
        w = sum.iter().map(|s| s / n as f64).collect();

        let mut losses = vec![0.0; n];
        coll.all_gather(&[loss], &mut losses)?;
        let mut expect = vec![0.0; n];
        world.all_gather(&[loss], &mut expect)?;
        wrong("ring all_gather", &losses, &expect, 0.0)?;
        mean_losses.push(losses.iter().sum::<f64>() / n as f64);
    }

    let want = serial_fedavg(&cfg, n);
    wrong("averaged parameters vs serial", &w, &want, 1e-10)?;
    if r == 0 {
        let first = mean_losses.first().copied().unwrap_or(f64::NAN);
        let last = mean_losses.last().copied().unwrap_or(f64::NAN);
        println!("OK tree_collectives: {n} ranks, root {root}, {} rounds, mean loss {first:.4} -> {last:.4}", cfg.rounds);
    }
    Ok(())
}
