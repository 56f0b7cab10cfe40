//! Distributed hash join / group-by: both tables are repartitioned by key hash
//! (all_to_all of counts, then all_to_all_v of each column), joined or aggregated
//! locally, and the result gathered on rank 0 and compared with a serial join.

mod collect;
mod config;
mod join;
mod shuffle;
mod table;

use config::{Config, Mode};
use dist_runtime::prelude::*;
use shuffle::Shuffler;
use table::{generate, owner, Rows};

/// The whole of table `name`, as every rank generated it (serial reference input).
fn whole_table(name: char, rows: usize, cfg: &Config, n: usize) -> Rows {
    let mut all = Rows::with_columns(1);
    for r in 0..n {
        let part = generate(name, rows, cfg.key_range, cfg.seed, r);
        all.keys.extend(part.keys);
        all.cols[0].extend(&part.cols[0]);
    }
    all
}

/// Runs the query on this rank's partition; returns the local result rows.
fn run_query(cfg: &Config, shuffler: &mut Shuffler, me: usize, n: usize) -> dist_runtime::Result<Rows> {
    let s = generate('S', cfg.rows_s, cfg.key_range, cfg.seed, me);
    let out = match cfg.mode {
        Mode::Join => {
            let r = generate('R', cfg.rows_r, cfg.key_range, cfg.seed, me);
            let r_part = shuffler.shuffle(&r)?;
            let s_part = shuffler.shuffle(&s)?;
            debug_assert!(r_part.keys.iter().chain(&s_part.keys).all(|&k| owner(k, n) == me));
            join::hash_join(&r_part, &s_part)
        }
        Mode::GroupBy => {
            let input = if cfg.combine { join::aggregate(&s) } else { s };
            let part = shuffler.shuffle(&input)?;
            join::aggregate(&part)
        }
    };
    Ok(out)
}

#[spmd]
fn main(world: Comm<World>) -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let cfg = Config::from_args(&args)?;
    let (me, n) = (world.rank(), world.size());

    let mut shuffler = Shuffler::new(&world);
    let local = run_query(&cfg, &mut shuffler, me, n)?;

    // Load balance of the result.
    let mut stats = [local.len() as u64, shuffler.sent as u64, shuffler.received as u64];
    let mut peak = stats;
    world.all_reduce(&mut stats, ReduceOp::Sum)?;
    world.all_reduce(&mut peak, ReduceOp::Max)?;

    let gathered = collect::gather_rows(&world, &local, 0)?;
    if let Some(got) = gathered {
        let s = whole_table('S', cfg.rows_s, &cfg, n);
        let want = match cfg.mode {
            Mode::Join => join::hash_join(&whole_table('R', cfg.rows_r, &cfg, n), &s),
            Mode::GroupBy => join::aggregate(&s),
        };
        let (got, want) = (join::canonical(&got), join::canonical(&want));
        if got != want {
            let first = got.iter().zip(&want).position(|(a, b)| a != b);
            return Err(format!(
                "{:?} result differs from the serial one: {} rows vs {}, first difference at {first:?}",
                cfg.mode, got.len(), want.len()
            )
            .into());
        }
        println!(
            "OK hash-{:?} n={n}: {} result rows match serial (max {} per rank), {} rows shuffled (max {} received by a rank)",
            cfg.mode, stats[0], peak[0], stats[1], peak[2]
        );
    }
    Ok(())
}
