mod cli;
mod rebalance;
mod records;
mod reference;
mod tree;

use dist_runtime::prelude::*;
use rebalance::Rebalancer;

type AppResult<T> = Result<T, Box<dyn std::error::Error>>;

#[spmd]
fn main(world: Comm<World>) -> AppResult<()> {
    let cfg = cli::Config::from_args()?;
    let (rank, size) = (world.rank(), world.size());

    let mine = records::generate(cfg.seed, rank, cfg.records, cfg.max_len);
    let mut rb = Rebalancer::new(world.clone());
    let owned = rb.exchange(&mine)?;
    if let Some(bad) = owned.iter().find(|r| r.owner(size) != rank) {
        return Err(format!("rank {rank} got key {} owned by rank {}", bad.key, bad.owner(size)).into());
    }

    // Global checksum on rank 0 through the hand-written tree.
    let lanes = records::lane_checksums(&owned);
    let summed = tree::reduce_lanes(&world, &lanes)?;

    // Global record count everywhere.
    let mut count = [owned.len() as u64];
    world.all_reduce(&mut count, ReduceOp::Sum)?;

    // Rank 0 collects how many records each rank ended up with.
    let held = [owned.len() as u64];
    let mut per_rank = vec![0u64; size];
    if rank == 0 {
        world.gather(&held, Some(&mut per_rank[..]), 0)?;
    } else {
        world.gather(&held, None, 0)?;
    }

    // Everyone learns the checksum rank 0 computed.
    let mut checksum = [summed.as_deref().map(records::fold_lanes).unwrap_or(0)];
    world.broadcast(&mut checksum, 0)?;

    if rank == 0 {
        let want = reference::expected(&cfg, size);
        if count[0] != want.count {
            return Err(format!("count {} but the serial reference has {}", count[0], want.count).into());
        }
        if checksum[0] != want.checksum {
            return Err(format!("checksum {:016x} but the serial reference has {:016x}", checksum[0], want.checksum).into());
        }
        if per_rank != want.per_rank {
            return Err(format!("records per rank {per_rank:?}, reference {:?}", want.per_rank).into());
        }
        println!(
            "OK n={size} records={} checksum={:016x} per-rank min={} max={} (rank 0 sent {} words, received {})",
            count[0],
            checksum[0],
            per_rank.iter().min().unwrap(),
            per_rank.iter().max().unwrap(),
            rb.stats.words_sent,
            rb.stats.words_received,
        );
    }
    Ok(())
}
