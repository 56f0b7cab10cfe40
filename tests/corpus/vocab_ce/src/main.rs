//! Vocab-parallel embedding + cross-entropy on a data-parallel × tensor-parallel mesh,
//! a few SGD steps, checked against the unsharded model.
//!
//! `cargo spmd run -n 4 -- --tp 2 --vocab 23 --dim 6 --steps 3`

mod cli;
mod data;
mod model;
mod reference;

use cli::Options;
use dist_runtime::prelude::*;
use model::{Dp, ShardedModel, Tp};
use reference::SerialModel;

#[derive(Debug)]
enum Failure {
    Args(String),
    Dist(dist_runtime::Error),
    Diverged { what: &'static str, err: f64 },
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Args(m) => write!(f, "bad arguments: {m}"),
            Failure::Dist(e) => write!(f, "{e}"),
            Failure::Diverged { what, err } => write!(f, "{what} differs from the serial model by {err:.3e}"),
        }
    }
}

impl From<dist_runtime::Error> for Failure {
    fn from(e: dist_runtime::Error) -> Self {
        Failure::Dist(e)
    }
}

fn max_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max)
}

#[spmd]
fn main(world: Comm<World>) -> Result<(), Failure> {
    let opts = Options::parse(std::env::args().skip(1)).map_err(Failure::Args)?;
    let n = world.size();
    let tp_size = opts.tp_for(n).map_err(Failure::Args)?;
    let (dp, tp) = world.mesh::<(Dp, Tp)>([n / tp_size, tp_size])?;
    let replicas = dp.size();

    let mut model = ShardedModel::new(dp, tp, &opts);
    let mut serial = SerialModel::new(&opts);
    let mut history = Vec::with_capacity(opts.steps);
    let mut loss_err: f64 = 0.0;
    for step in 0..opts.steps {
        let (tokens, targets) = data::batch(opts.vocab, opts.batch, opts.seed, model.replica(), step);
        let loss = model.train_step(&tokens, &targets, opts.lr)?;
        let want = serial.step(&opts, replicas, step);
        loss_err = loss_err.max((loss - want).abs());
        history.push(loss);
    }

    // Every rank checks its own shard, and the worst difference is agreed on.
    let (lo, hi, emb, out) = model.shard();
    let d = opts.dim;
    let mut worst = [loss_err, max_diff(emb, &serial.emb[lo * d..hi * d]).max(max_diff(out, &serial.out[lo * d..hi * d]))];
    world.all_reduce(&mut worst, ReduceOp::Max)?;
    if worst[0] > 1e-10 {
        return Err(Failure::Diverged { what: "the loss", err: worst[0] });
    }
    if worst[1] > 1e-10 {
        return Err(Failure::Diverged { what: "a weight shard", err: worst[1] });
    }
    if world.rank() == 0 {
        if !opts.quiet {
            let shown: Vec<String> = history.iter().map(|l| format!("{l:.6}")).collect();
            println!("loss by step: {}", shown.join(" "));
        }
        println!(
            "vocab_ce OK: {replicas} (dp) x {tp_size} (tp), vocab {}, {} steps, loss error {:.1e}, weight error {:.1e}",
            opts.vocab, opts.steps, worst[0], worst[1]
        );
    }
    Ok(())
}
