//! Numerics across ranks, each checked against the serial computation: a weighted sum
//! (Σ wᵢxᵢ / Σ wᵢ), a softmax over a vector sharded across ranks (MAX then SUM
//! all_reduce), and an L2 normalisation (SUM of squares).
//!
//! `cargo xtask run -n 4 --example numerics`

mod support;

use dist_runtime::prelude::*;
use support::{check_close, shard, softmax, Rng};

const LEN: usize = 103;

#[spmd(strict)]
fn main(world: Comm<World>) -> Result<(), String> {
    let (r, n) = (world.rank(), world.size());
    let err = |e: dist_runtime::Error| e.to_string();
    let full = Rng::new(5).vec(LEN, 4.0);
    let weights = Rng::new(6).vec(LEN, 1.0).into_iter().map(|w| w.abs() + 0.1).collect::<Vec<_>>();
    let (lo, hi) = shard(LEN, n, r);
    let (x, w) = (&full[lo..hi], &weights[lo..hi]);

    // Weighted mean: one all_reduce of [Σ w·x, Σ w].
    let mut acc = [x.iter().zip(w).map(|(a, b)| a * b).sum::<f64>(), w.iter().sum::<f64>()];
    world.all_reduce(&mut acc, ReduceOp::Sum).map_err(err)?;
    let wmean = acc[0] / acc[1];
    let want = full.iter().zip(&weights).map(|(a, b)| a * b).sum::<f64>() / weights.iter().sum::<f64>();
    let d1 = check_close("weighted mean", &[wmean], &[want], 1e-12)?;

    // Softmax over the sharded vector.
    let mut m = [x.iter().cloned().fold(f64::NEG_INFINITY, f64::max)];
    world.all_reduce(&mut m, ReduceOp::Max).map_err(err)?;
    let e: Vec<f64> = x.iter().map(|v| (v - m[0]).exp()).collect();
    let mut s = [e.iter().sum::<f64>()];
    world.all_reduce(&mut s, ReduceOp::Sum).map_err(err)?;
    let p: Vec<f64> = e.iter().map(|v| v / s[0]).collect();
    let mut serial = full.clone();
    softmax(&mut serial);
    let d2 = check_close("softmax", &p, &serial[lo..hi], 1e-12)?;

    // L2 normalisation.
    let mut sq = [x.iter().map(|v| v * v).sum::<f64>()];
    world.all_reduce(&mut sq, ReduceOp::Sum).map_err(err)?;
    let unit: Vec<f64> = x.iter().map(|v| v / sq[0].sqrt()).collect();
    let norm = full.iter().map(|v| v * v).sum::<f64>().sqrt();
    let d3 = check_close("L2 normalisation", &unit, &full[lo..hi].iter().map(|v| v / norm).collect::<Vec<_>>(), 1e-12)?;

    let mut worst = [d1.max(d2).max(d3)];
    world.all_reduce(&mut worst, ReduceOp::Max).map_err(err)?;
    if r == 0 {
        println!("weighted mean {wmean:.12} (serial {want:.12})");
        println!("softmax max {:.6}, sum of exps {:.6}; L2 norm {:.6}", m[0], s[0], sq[0].sqrt());
        println!("all match the serial computation: max relative difference {:.2e}", worst[0]);
    }
    Ok(())
}
