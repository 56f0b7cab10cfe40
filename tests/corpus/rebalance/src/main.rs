//! Rounds of weight-based load balancing (exscan, all_to_all, all_to_all_v) and a
//! hand-written ring all-gather of per-rank summaries, against a serial simulation.

mod balance;
mod items;
mod opts;
mod ring;
mod serial;

use balance::Balancer;
use dist_runtime::prelude::*;
use items::{drift, generate, load, summary};
use ring::Ring;

#[spmd]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let o = opts::from_args().map_err(dist_runtime::Error::Env)?;
    let (r, n) = (world.rank(), world.size());
    let mut items = generate(r, o.base, o.seed);
    let balancer = Balancer::new(&world, o.policy);
    let ring = Ring::new(&world);
    let mut history = Vec::new();
    let mut tables = Vec::new();

    for round in 0..o.rounds {
        drift(&mut items, round, o.seed);
        let (total, max) = balancer.loads(&items)?;
        history.push((total, max));
        let global_imbalance = max as f64 * n as f64 / total.max(1) as f64;
        let local_imbalance = load(&items) as f64 * n as f64 / total.max(1) as f64;
        if !o.quiet && local_imbalance > 2.0 {
            println!("round {round}: rank {r} holds {:.2}× its share", local_imbalance);
        }
        if global_imbalance <= o.target {
            break;
        }
        items = balancer.rebalance(items, total)?;
        let table = ring.all_gather(&summary(&items))?;
        if r == 0 && !o.quiet {
            let loads: Vec<u64> = table.chunks(items::SUMMARY).map(|s| s[1]).collect();
            println!("round {round}: imbalance {global_imbalance:.3}, loads after {loads:?}");
        }
        tables.push(table);
    }

    let want = serial::simulate(n, &o);
    let mut problems = Vec::new();
    if items != want.per_rank[r] {
        problems.push(format!("rank {r} holds {} items, serial {}", items.len(), want.per_rank[r].len()));
    }
    if history != want.history {
        problems.push(format!("loads {history:?} != serial {:?}", want.history));
    }
    if tables != want.tables {
        problems.push("ring-gathered summaries differ from serial".to_string());
    }
    let mut bad = [problems.len() as u64];
    world.all_reduce(&mut bad, ReduceOp::Max)?;
    if bad[0] > 0 {
        return Err(dist_runtime::Error::Mismatch {
            comm: "World".into(),
            msg: format!("rank {r}: {}", if problems.is_empty() { "a peer differs".into() } else { problems.join("; ") }),
        });
    }
    if r == 0 && !o.quiet {
        println!("{:>5} {:>7} {:>9} {:>10} {:>10}", "rank", "items", "load", "first id", "last id");
        for (k, s) in tables.last().map(|t| t.chunks(items::SUMMARY).collect::<Vec<_>>()).unwrap_or_default().iter().enumerate() {
            println!("{k:>5} {:>7} {:>9} {:>10} {:>10}", s[0], s[1], s[2] as i64, s[3]);
        }
    }
    if r == 0 {
        println!("OK: {} rounds on {n} ranks, {} items, loads {:?}", history.len(), want.per_rank.iter().map(|v| v.len()).sum::<usize>(), history);
    }
    Ok(())
}
