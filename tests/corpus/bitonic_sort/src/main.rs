//! Distributed sort: local sort, then merge-split exchanges between ranks (bitonic on
//! power-of-two worlds, odd-even transposition elsewhere), then checked.

mod config;
mod keys;
mod sorter;
mod verify;

use dist_runtime::prelude::*;

use config::{Algo, Config};
use sorter::Sorter;

#[spmd]
fn main(world: Comm<World>) -> Result<(), String> {
    let cfg = Config::from_args()?;
    let err = |e: dist_runtime::Error| e.to_string();
    let (r, p) = (world.rank(), world.size());
    let counts = keys::block_counts(cfg.keys, p);
    let mine = keys::local_keys(cfg.seed, cfg.keys, p, r, cfg.range);
    let mut sorter = Sorter::new(world.clone(), counts, mine);

    let algo = match cfg.algo {
        Algo::Auto if p.is_power_of_two() => Algo::Bitonic,
        Algo::Auto => Algo::OddEven,
        Algo::Bitonic if !p.is_power_of_two() => {
            if r == 0 {
                println!("bitonic needs a power-of-two world, {p} is not: using odd-even transposition");
            }
            Algo::OddEven
        }
        other => other,
    };
    match algo {
        Algo::Bitonic => sorter.bitonic().map_err(err)?,
        _ => sorter.odd_even().map_err(err)?,
    }

    if !verify::globally_sorted(&world, &sorter.keys).map_err(err)? {
        return Err(format!("rank {r}: keys are not globally sorted after {algo:?}"));
    }
    match verify::matches_serial(&world, &cfg, &sorter.keys).map_err(err)? {
        Some(false) => Err(format!("{algo:?} sort differs from the serial sort")),
        Some(true) => {
            println!("sort OK: {} keys on {p} ranks with {algo:?}", cfg.keys);
            Ok(())
        }
        None => Ok(()),
    }
}
