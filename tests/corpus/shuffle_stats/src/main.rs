//! A MapReduce-style shuffle (records to the owners of their keys) and statistics
//! reduced in two levels (nodes of --node-size ranks, then their leaders), checked
//! against the same computation done serially.
//!
//! cargo spmd run -n 8 -- --node-size 3 --records 100

mod config;
mod hier;
mod records;
mod serial;
mod shuffle;

use config::Config;
use dist_runtime::prelude::*;
use hier::Hierarchy;
use records::owner;

type BoxError = Box<dyn std::error::Error>;

#[spmd]
fn main(world: Comm<World>) -> Result<(), BoxError> {
    let cfg = Config::parse(std::env::args().skip(1))?;
    let (rank, n) = (world.rank(), world.size());

    let mine = records::generate(&cfg, rank);
    let owned = shuffle::exchange(&world, &mine)?;
    let per_key = shuffle::aggregate(&owned);

    // Statistics of what this rank owns, reduced over the world in two levels.
    let hier = Hierarchy::new(&world, cfg.node_size)?;
    let mut sums = [owned.len() as u64, owned.iter().map(|r| r.value).sum(), per_key.len() as u64];
    hier.all_reduce(&mut sums, ReduceOp::Sum)?;
    let mut max = [owned.iter().map(|r| r.value).max().unwrap_or(0)];
    hier.all_reduce(&mut max, ReduceOp::Max)?;

    let want = serial::compute(&cfg, n);
    let mut problems = Vec::new();
    if sums != [want.records, want.sum, want.per_key.len() as u64] {
        problems.push(format!("totals {sums:?}, expected {:?}", [want.records, want.sum, want.per_key.len() as u64]));
    }
    if max[0] != want.max {
        problems.push(format!("max {}, expected {}", max[0], want.max));
    }
    for (key, agg) in &want.per_key {
        let got = per_key.get(key);
        if owner(*key, n) == rank && got != Some(agg) {
            problems.push(format!("key {key}: {got:?}, expected {agg:?}"));
        } else if owner(*key, n) != rank && got.is_some() {
            problems.push(format!("key {key} aggregated on rank {rank}, which does not own it"));
        }
    }
    let mut bad = [problems.len() as u64];
    world.all_reduce(&mut bad, ReduceOp::Sum)?;
    if !problems.is_empty() {
        return Err(format!("rank {rank}: {}", problems.join("; ")).into());
    }
    if bad[0] != 0 {
        return Err(format!("rank {rank}: {} problems on other ranks", bad[0]).into());
    }
    if rank == 0 {
        println!(
            "OK: {n} ranks in nodes of {} ({} leaders): {} records, {} keys, sum {}, max {}",
            cfg.node_size,
            n.div_ceil(cfg.node_size),
            sums[0],
            sums[2],
            sums[1],
            max[0]
        );
    }
    Ok(())
}
