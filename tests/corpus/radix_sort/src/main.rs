//! Distributed LSD radix sort of u32 keys: per digit, a local histogram, the global
//! totals (all_reduce) and the counts on lower ranks (exscan) give every key its global
//! position; counts then keys move with all_to_all / all_to_all_v. Rank 0 checks the
//! result against a serial sort of every rank's keys.

mod config;
mod digits;
mod error;
mod keys;
mod sorter;
mod verify;

use dist_runtime::prelude::*;

use config::Config;
use error::SortError;
use sorter::RadixSorter;

/// The rank that checks the result and reports.
const REPORT_ROOT: usize = 0;

#[spmd]
fn main(world: Comm<World>) -> Result<(), Box<dyn std::error::Error>> {
    let cfg = Config::from_env()?;
    let rank = world.rank();
    let keys = keys::generate(cfg.seed, rank, cfg.keys_on(rank), cfg.key_mask());

    let mut sorter = RadixSorter::new(world.clone(), keys)?;
    let passes = sorter.sort(cfg.bits_per_pass)?;
    if cfg.verbose {
        let moved: usize = sorter.history.iter().map(|p| p.sent_away).sum();
        let got: usize = sorter.history.iter().map(|p| p.received).sum();
        println!(
            "rank {rank}: {} keys, {moved} sent to and {got} received from other ranks over {passes} passes",
            sorter.keys().len(),
        );
    }

    let descents = verify::count_descents(&world, sorter.keys())?;
    if descents != 0 {
        return Err(Box::new(SortError::Verify(format!("{descents} descents in the sorted sequence"))));
    }
    let layout = sorter.layout().clone();
    if let Some(total) = verify::against_serial(&world, &cfg, &layout, sorter.keys(), REPORT_ROOT)? {
        println!(
            "OK radix_sort ranks={} keys={total} bits_per_pass={} passes={passes} (at most {} for {}-bit keys)",
            world.size(),
            cfg.bits_per_pass,
            cfg.passes(),
            cfg.key_bits
        );
    }
    Ok(())
}
