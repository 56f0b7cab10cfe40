//! Distributed word count: every rank reads its own words, combines them, shuffles
//! (word, count) pairs to the word's owner (counts by all_to_all, pairs by
//! all_to_all_v), merges, and rank 0 collects each owner's top k (gather_v), keeps the
//! global top k and broadcasts the table. Checked against a serial count of all words.

mod config;
mod records;
mod shuffle;
mod topk;

use config::Config;
use dist_runtime::prelude::*;
use records::{generate, spell};
use shuffle::Shuffler;
use std::collections::BTreeMap;

/// Per-rank load figures, sent to rank 0 for the report: [sent, received, owned].
const LOAD: Tag<u64> = Tag::new(4);

fn err(e: dist_runtime::Error) -> String {
    e.to_string()
}

fn serial_table(cfg: &Config, n: usize) -> (u64, Vec<(u64, u64)>) {
    let mut all: BTreeMap<u64, u64> = BTreeMap::new();
    for w in (0..n).flat_map(|r| generate(cfg, r)) {
        *all.entry(w).or_default() += 1;
    }
    (all.values().sum(), topk::top_k(all, cfg.topk))
}

#[spmd]
fn main(world: Comm<World>) -> Result<(), String> {
    let cfg = Config::from_args()?;
    let (r, n) = (world.rank(), world.size());

    let words = generate(&cfg, r);
    let mut shuffler = Shuffler::new(&world);
    let buckets = shuffler.buckets(&words);
    let owned = shuffler.exchange(&buckets).map_err(err)?;
    let counts = topk::reduce_pairs(&owned);

    // Every word was counted exactly once somewhere.
    let mut total = [counts.values().sum::<u64>(), words.len() as u64];
    world.all_reduce(&mut total, ReduceOp::Sum).map_err(err)?;

    let local_top = topk::top_k(counts.iter().map(|(&k, &c)| (k, c)), cfg.topk);
    let best = topk::gather_top(&world, &local_top, cfg.topk).map_err(err)?;
    let table = topk::broadcast_table(&world, best, 0).map_err(err)?;

    // Load report on rank 0.
    let load = [shuffler.pairs_sent as u64, shuffler.pairs_received as u64, counts.len() as u64];
    let mut loads = vec![load];
    if r == 0 {
        for src in 1..n {
            let mut got = [0u64; 3];
            world.recv(src, LOAD, &mut got).map_err(err)?;
            loads.push(got);
        }
    } else {
        world.send(0, LOAD, &load).map_err(err)?;
    }
    let mut max_owned = [counts.len() as u64];
    world.all_reduce(&mut max_owned, ReduceOp::Max).map_err(err)?;

    let (want_total, want) = serial_table(&cfg, n);
    let ok = total[0] == want_total && total[1] == want_total && table == want;
    if r == 0 {
        for (i, l) in loads.iter().enumerate() {
            println!("rank {i}: sent {} pairs, received {}, owns {} words", l[0], l[1], l[2]);
        }
        let shown: Vec<String> = table.iter().take(5).map(|&(k, c)| format!("{}={c}", spell(k))).collect();
        println!(
            "word_shuffle: {} words on {n} ranks, busiest owner {} words, top {}: {} ... {}",
            total[0],
            max_owned[0],
            table.len(),
            shown.join(" "),
            if ok { "OK" } else { "MISMATCH" }
        );
    }
    if !ok {
        return Err(format!("rank {r}: table {table:?} differs from the serial {want:?} (total {total:?}, want {want_total})"));
    }
    Ok(())
}
