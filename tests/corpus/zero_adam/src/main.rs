//! Data-parallel linear regression with a ZeRO-1 sharded Adam optimizer, checked
//! against the same training done serially on every sample.
//!
//! cargo spmd run -n 4 -- --features 10 --samples 205 --steps 40 --micro 17

mod data;
mod model;
mod optim;

use dist_runtime::prelude::*;

use data::{block_counts, offsets, Dataset};
use optim::{Adam, ZeroOptimizer};

const REPLICA: Tag<f64> = Tag::new(1);
const STATS: Tag<f64> = Tag::new(2);

struct Config {
    features: usize,
    samples: usize,
    steps: usize,
    micro: usize,
    lr: f64,
    clip: f64,
    seed: u64,
    tol: f64,
}

fn parse_args() -> Result<Config, String> {
    let mut cfg = Config { features: 8, samples: 128, steps: 30, micro: 16, lr: 0.05, clip: 5.0, seed: 7, tol: 1e-8 };
    let args: Vec<String> = std::env::args().skip(1).collect();
    for pair in args.chunks(2) {
        let [flag, value] = pair else {
            return Err(format!("{} needs a value", pair[0]));
        };
        let bad = |_| format!("bad value {value:?} for {flag}");
        match flag.as_str() {
            "--features" => cfg.features = value.parse().map_err(bad)?,
            "--samples" => cfg.samples = value.parse().map_err(bad)?,
            "--steps" => cfg.steps = value.parse().map_err(bad)?,
            "--micro" => cfg.micro = value.parse().map_err(bad)?,
            "--seed" => cfg.seed = value.parse().map_err(bad)?,
            "--lr" => cfg.lr = value.parse().map_err(|_| format!("bad value {value:?} for {flag}"))?,
            "--clip" => cfg.clip = value.parse().map_err(|_| format!("bad value {value:?} for {flag}"))?,
            "--tol" => cfg.tol = value.parse().map_err(|_| format!("bad value {value:?} for {flag}"))?,
            other => return Err(format!("unknown flag {other}")),
        }
    }
    if cfg.micro == 0 || cfg.features == 0 {
        return Err("--micro and --features must be positive".into());
    }
    Ok(cfg)
}

fn failure(msg: String) -> dist_runtime::Error {
    dist_runtime::Error::Backend { backend: "zero_adam", msg, source: None }
}

fn max_abs_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max)
}

#[spmd]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let cfg = parse_args().map_err(dist_runtime::Error::Env)?;
    let (rank, n) = (world.rank(), world.size());
    let data = Dataset::new(cfg.features, cfg.samples, cfg.seed);
    let num_params = cfg.features + 1;

    // This rank's block of samples.
    let counts = block_counts(cfg.samples, n);
    let start = offsets(&counts)[rank];
    let local = data.slice(start..start + counts[rank]);

    // Rank 0 draws the initial parameters; everybody starts from its copy.
    let mut params = vec![0.0; num_params];
    if rank == 0 {
        params.iter_mut().enumerate().for_each(|(j, p)| *p = 0.1 * ((j * 7 % 5) as f64 - 2.0));
    }
    world.broadcast(&mut params, 0)?;
    let init = params.clone();

    let adam = Adam::new(cfg.lr);
    let mut opt = ZeroOptimizer::new(&world, num_params, adam, cfg.clip);
    let mut losses = Vec::with_capacity(cfg.steps);
    let mut last_sse = 0.0;
    for _step in 0..cfg.steps {
        let mut grad = vec![0.0; num_params];
        let mut sse = 0.0;
        // Gradient accumulation over local micro-batches.
        for mb in local.chunks(cfg.micro) {
            sse += model::accumulate(&params, mb, cfg.samples, &mut grad);
        }
        let mut total = [sse];
        world.all_reduce(&mut total, ReduceOp::Sum)?;
        losses.push(total[0] / cfg.samples as f64);
        last_sse = sse;
        opt.step(&mut params, &grad)?;
    }

    // Every replica must hold bitwise the same parameters: compare with the left
    // neighbour's copy around the ring.
    let (right, left) = ((rank + 1) % n, (rank + n - 1) % n);
    let mut neighbour = vec![0.0; num_params];
    world.sendrecv(right, REPLICA, &params, left, &mut neighbour)?;
    let replicas_agree = neighbour == params;

    // Per-rank statistics, printed by rank 0.
    let stats = [local.len() as f64, last_sse, opt.shard_range().len() as f64];
    if rank == 0 {
        let mut rows = vec![stats];
        for src in 1..n {
            let mut row = [0.0; 3];
            world.recv(src, STATS, &mut row)?;
            rows.push(row);
        }
        for (r, row) in rows.iter().enumerate() {
            println!("rank {r}: {} samples, last sse {:.6}, {} params in shard", row[0], row[1], row[2]);
        }
    } else {
        world.send(0, STATS, &stats)?;
    }

    // Serial reference, computed on every rank.
    let (want, want_losses) = model::train_serial(&data, &init, cfg.steps, adam, cfg.clip);
    let mut err = [max_abs_diff(&params, &want).max(max_abs_diff(&losses, &want_losses)), 0.0];
    err[1] = if replicas_agree { 0.0 } else { 1.0 };
    world.all_reduce(&mut err, ReduceOp::Max)?;
    if err[1] != 0.0 {
        return Err(failure(format!("rank {rank}: replicas differ after training")));
    }
    if !(err[0] <= cfg.tol) {
        return Err(failure(format!("distributed training differs from serial by {:e}", err[0])));
    }
    if rank == 0 {
        let fin = losses.last().copied().unwrap_or(f64::NAN);
        println!(
            "OK zero_adam: {n} ranks, {} params, {} steps, loss {:.3e} -> {:.3e}, max diff {:.1e}",
            num_params, cfg.steps, losses.first().copied().unwrap_or(f64::NAN), fin, err[0]
        );
    }
    Ok(())
}
