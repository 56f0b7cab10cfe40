//! Recursive algorithms over communicators: a hand-written recursive halving/doubling
//! all-reduce, and a recursive coordinate bisection of a 2-D point cloud that splits
//! its communicator at every level. Both are checked against serial references.
//!
//! `cargo spmd run -n 4 -- --points 400 --len 1000 --algo rabenseifner`

mod allreduce;
mod cli;
mod geom;
mod rcb;

use cli::Config;
use dist_runtime::prelude::*;
use std::error::Error;

dist_runtime::group!(Parity);

/// Rank `r`'s contribution to the all-reduce test: quarters of small integers, so
/// every sum is exact whatever the order.
fn contribution(seed: u64, r: usize, len: usize) -> Vec<f64> {
    (0..len).map(|i| ((seed as usize + 31 * r + 7 * i) % 17) as f64 * 0.25).collect()
}

fn serial_sum(seed: u64, ranks: &[usize], len: usize) -> Vec<f64> {
    let mut acc = vec![0.0; len];
    for &r in ranks {
        acc.iter_mut().zip(contribution(seed, r, len)).for_each(|(a, b)| *a += b);
    }
    acc
}

/// The hand-written all-reduce on the world and on the even/odd halves, each against
/// the serial sum and the library's all_reduce. Returns the number of wrong entries.
fn check_all_reduce(world: &Comm<World>, cfg: &Config) -> dist_runtime::Result<usize> {
    let (r, n) = (world.rank(), world.size());
    let mut wrong = 0;

    let mut mine = contribution(cfg.seed, r, cfg.len);
    let mut lib = mine.clone();
    allreduce::all_reduce_sum(world, &mut mine, cfg.algo)?;
    world.all_reduce(&mut lib, ReduceOp::Sum)?;
    let all: Vec<usize> = (0..n).collect();
    let want = serial_sum(cfg.seed, &all, cfg.len);
    wrong += mine.iter().zip(&want).filter(|(a, b)| a != b).count();
    wrong += lib.iter().zip(&want).filter(|(a, b)| a != b).count();

    let parity = world.split::<Parity>((r % 2) as u32, r as i64)?;
    let mut mine = contribution(cfg.seed, r, cfg.len);
    allreduce::all_reduce_sum(&parity, &mut mine, cfg.algo)?;
    let want = serial_sum(cfg.seed, parity.members(), cfg.len);
    wrong += mine.iter().zip(&want).filter(|(a, b)| a != b).count();
    Ok(wrong)
}

/// The distributed bisection against the serial one. Returns (wrong parts, cuts, sizes).
fn check_partition(world: &Comm<World>, cfg: &Config) -> dist_runtime::Result<(u64, usize, Option<Vec<u64>>)> {
    let (r, n) = (world.rank(), world.size());
    let points = geom::local_points(cfg.seed, r, cfg.points_per_rank);
    let mut bisector = rcb::Bisector::new(cfg.max_iters);
    let part = bisector.run(world, 0, 0, points)?;

    let everything: Vec<geom::Point> = (0..n).flat_map(|k| geom::local_points(cfg.seed, k, cfg.points_per_rank)).collect();
    let (parts, cuts) = geom::serial_partition(everything, n, cfg.max_iters);
    let mut ids: Vec<u64> = part.iter().map(|p| p.id).collect();
    ids.sort_unstable();
    let mut bad = [u64::from(ids != parts[r])];
    world.all_reduce(&mut bad, ReduceOp::Sum)?;

    let mine_cuts: Vec<&geom::Cut> = cuts.iter().filter(|c| (c.first_rank..c.first_rank + c.ranks).contains(&r)).collect();
    if mine_cuts.len() != bisector.cuts.len()
        || mine_cuts.iter().zip(&bisector.cuts).any(|(a, b)| a.at != b.at || a.axis != b.axis)
    {
        bad[0] += 1;
    }

    let sizes = [ids.len() as u64];
    if r == 0 {
        let mut all = vec![0u64; n];
        world.gather(&sizes, Some(&mut all[..]), 0)?;
        if cfg.verbose {
            for c in &cuts {
                println!("{:indent$}cut ranks {}..{} along {:?} at {:.6}", "", c.first_rank, c.first_rank + c.ranks, c.axis, c.at, indent = 2 * c.depth);
            }
        }
        Ok((bad[0], cuts.len(), Some(all)))
    } else {
        world.gather(&sizes, None, 0)?;
        Ok((bad[0], cuts.len(), None))
    }
}

#[spmd]
fn main(world: Comm<World>) -> Result<(), Box<dyn Error>> {
    let cfg = Config::from_args(std::env::args().skip(1))?;
    let wrong_sums = check_all_reduce(&world, &cfg)?;
    let mut wrong_total = [wrong_sums as u64];
    world.all_reduce(&mut wrong_total, ReduceOp::Sum)?;
    if wrong_total[0] != 0 {
        return Err(format!("rank {}: hand-written all-reduce differs from the serial sum in {wrong_sums} entries", world.rank()).into());
    }

    let (bad_parts, cuts, sizes) = check_partition(&world, &cfg)?;
    if bad_parts != 0 {
        return Err(format!("rank {}: {bad_parts} parts or cuts differ from the serial bisection", world.rank()).into());
    }
    if let Some(sizes) = sizes {
        let total: u64 = sizes.iter().sum();
        if total != (cfg.points_per_rank * world.size()) as u64 {
            return Err(format!("points lost: {total} left of {}", cfg.points_per_rank * world.size()).into());
        }
        println!(
            "recursive_bisect OK: {} ranks, {:?} all-reduce of {} values, {} points in {} cuts, part sizes {:?}",
            world.size(),
            cfg.algo,
            cfg.len,
            total,
            cuts,
            sizes
        );
    }
    Ok(())
}
