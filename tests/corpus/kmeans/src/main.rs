//! Distributed k-means (Lloyd's algorithm) on block-distributed synthetic points,
//! checked against the serial algorithm on all points: same assignments, same
//! centroids, same number of iterations.
//!
//! cargo spmd run -n 4 -- --points 203 --k 4 --iters 20

mod cluster;
mod data;
mod geometry;

use dist_runtime::prelude::*;

use cluster::DistKMeans;
use data::Blocks;

struct Config {
    points: usize,
    k: usize,
    iters: usize,
    blobs: usize,
    seed: u64,
    tol: f64,
}

fn num<T: std::str::FromStr>(flag: &str, value: &str) -> Result<T, String> {
    value.parse().map_err(|_| format!("bad value {value:?} for {flag}"))
}

fn parse_args() -> Result<Config, String> {
    let mut cfg = Config { points: 400, k: 4, iters: 25, blobs: 5, seed: 11, tol: 1e-9 };
    let mut argv = std::env::args().skip(1);
    while let Some(flag) = argv.next() {
        let value = argv.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--points" => cfg.points = num(&flag, &value)?,
            "--k" => cfg.k = num(&flag, &value)?,
            "--iters" => cfg.iters = num(&flag, &value)?,
            "--blobs" => cfg.blobs = num(&flag, &value)?,
            "--seed" => cfg.seed = num(&flag, &value)?,
            "--tol" => cfg.tol = num(&flag, &value)?,
            _ => return Err(format!("unknown argument {flag}")),
        }
    }
    if cfg.k == 0 || cfg.k > cfg.points {
        return Err(format!("--k {} must be in 1..={}", cfg.k, cfg.points));
    }
    Ok(cfg)
}

#[spmd]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let cfg = parse_args().map_err(dist_runtime::Error::Env)?;
    if cfg.points < world.size() {
        return Err(dist_runtime::Error::Env(format!("{} points for {} ranks", cfg.points, world.size())));
    }
    let blocks = Blocks { n: cfg.points, parts: world.size() };
    let local = data::points(cfg.seed, cfg.blobs, blocks.range(world.rank()));

    let mut km = DistKMeans::new(&world, blocks, cfg.k, local);
    let iters = km.run(cfg.iters, cfg.tol)?;
    let gathered = km.gather_assignments(0)?;
    let inertia = km.inertia()?;

    let mut bad = [0u64];
    if let Some(assign) = &gathered {
        let all = data::points(cfg.seed, cfg.blobs, 0..cfg.points);
        let want = geometry::serial_kmeans(&all, cfg.k, cfg.iters, cfg.tol);
        bad[0] += assign.iter().zip(&want.assign).filter(|(a, b)| **a != **b as u64).count() as u64;
        bad[0] += km.centroids.iter().zip(&want.centroids).filter(|(a, b)| a != b).count() as u64;
        bad[0] += u64::from(iters != want.iters);
        bad[0] += u64::from((inertia - want.inertia).abs() > 1e-9 * want.inertia.max(1.0));
    }
    world.broadcast(&mut bad, 0)?;
    if bad[0] != 0 {
        return Err(dist_runtime::Error::Mismatch {
            comm: "World".into(),
            msg: format!("distributed k-means disagrees with the serial run in {} places", bad[0]),
        });
    }

    if world.rank() == 0 {
        let last = km.shifts.last().copied().unwrap_or(0.0);
        println!(
            "OK kmeans: {} ranks, {} points, k = {}, {iters} iterations (last shift {last:.3e})",
            world.size(),
            cfg.points,
            cfg.k
        );
    }
    Ok(())
}
