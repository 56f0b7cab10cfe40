//! Distributed k-means (Lloyd) with empty-cluster repair, checked against serial k-means.

mod cluster;
mod config;
mod data;
mod repair;
mod serial;

use cluster::KMeans;
use config::Config;
use dist_runtime::prelude::*;

type AnyResult<T> = Result<T, Box<dyn std::error::Error>>;

/// Every rank's assignments, in global order, on rank 0.
fn gather_assignments(world: &Comm<World>, km: &KMeans, n: usize) -> dist_runtime::Result<Option<Vec<u32>>> {
    let counts: Vec<usize> = (0..world.size()).map(|r| data::block(n, world.size(), r).1).collect();
    let mine: Vec<u32> = km.assign.iter().map(|&a| a as u32).collect();
    if world.rank() == 0 {
        let mut all = vec![0u32; n];
        world.gather_v(&mine, Some(&mut all[..]), &counts, 0)?;
        Ok(Some(all))
    } else {
        world.gather_v(&mine, None, &counts, 0)?;
        Ok(None)
    }
}

#[spmd]
fn main(world: Comm<World>) -> AnyResult<()> {
    let cfg = Config::from_args()?;
    let rank0_points = data::block(cfg.points, world.size(), 0).1;
    if rank0_points < cfg.k {
        return Err(format!("rank 0 holds {rank0_points} points, fewer than k = {}", cfg.k).into());
    }
    let mut km = KMeans::new(&world, &cfg);
    let summary = km.run(&cfg)?;
    let reference = serial::kmeans(&cfg, rank0_points);

    let cdiff = km.centroids.iter().zip(&reference.centroids).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    if cdiff > 1e-9 || summary.iterations != reference.iterations || km.repairs != reference.repairs {
        return Err(format!(
            "rank {}: centroids differ by {cdiff:.3e}; iterations {} vs {}; repairs {} vs {}",
            world.rank(),
            summary.iterations,
            reference.iterations,
            km.repairs,
            reference.repairs
        )
        .into());
    }
    let mut matched = String::from("assignments not gathered");
    if cfg.gather {
        if let Some(all) = gather_assignments(&world, &km, cfg.points)? {
            let wrong = all.iter().zip(&reference.assign).filter(|(a, b)| **a as usize != **b).count();
            if wrong > 0 {
                return Err(format!("{wrong} of {} assignments differ from serial", cfg.points).into());
            }
            matched = format!("all {} assignments match", cfg.points);
        }
    }
    if world.rank() == 0 {
        println!(
            "OK kmeans k={} n={} dim={} on {} ranks: {} iterations, {} repairs, inertia {:.4}, {matched}",
            cfg.k,
            cfg.points,
            cfg.dim,
            world.size(),
            summary.iterations,
            km.repairs,
            summary.inertia
        );
    }
    Ok(())
}
