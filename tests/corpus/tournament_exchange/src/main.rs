//! Personalised all-to-all by a round-robin tournament (circle method), used for a
//! histogram sort of skewed keys and for a block transpose of a matrix; both are
//! compared with the runtime's `all_to_all_v` and with serial references.
//!
//! `cargo spmd run -n 5 -- [--keys K] [--bins B] [--matrix M] [--reps R] [--seed S]`

mod config;
mod exchange;
mod schedule;
mod sort;
mod transpose;

use std::error::Error;
use std::time::{Duration, Instant};

use dist_runtime::prelude::*;

use config::ExchangeConfig;
use exchange::{builtin_all_to_all_v, pairwise_all_to_all_v};
use schedule::Schedule;
use sort::Bins;

const KEYS: Tag<u64> = Tag::new(41);
const CELLS: Tag<f64> = Tag::new(42);

type Res<T> = Result<T, Box<dyn Error>>;

/// Runs `f` `reps` times; the result (which must not change between runs) and the
/// fastest time.
fn best_of<T: PartialEq>(reps: usize, mut f: impl FnMut() -> dist_runtime::Result<T>) -> Res<(T, Duration)> {
    let mut best: Option<(T, Duration)> = None;
    for _ in 0..reps {
        let t0 = Instant::now();
        let out = f()?;
        let dt = t0.elapsed();
        best = match best {
            Some((prev, _)) if prev != out => return Err("a repetition gave another result".into()),
            Some((prev, t)) => Some((prev, t.min(dt))),
            None => Some((out, dt)),
        };
    }
    best.ok_or_else(|| "no repetitions".into())
}

#[spmd]
fn main(world: Comm<World>) -> Res<()> {
    let cfg = ExchangeConfig::from_args(std::env::args().skip(1))?;
    let (r, n) = (world.rank(), world.size());
    let byes = Schedule::new(r, n).filter(|round| round.partner.is_none()).count();

    // Histogram sort: balance the bins, route every key to its owner, exchange.
    let mut keys = sort::keys_of(r, cfg.keys_per_rank, cfg.seed);
    let bins = Bins::balance(&world, &keys, cfg.bins)?;
    let counts = bins.route(&mut keys, n);
    let ((mut mine, from), t_pairwise) =
        best_of(cfg.reps, || pairwise_all_to_all_v(&world, &keys, &counts, KEYS))?;
    let ((builtin, builtin_from), t_builtin) = best_of(cfg.reps, || builtin_all_to_all_v(&world, &keys, &counts))?;
    if mine != builtin || from != builtin_from {
        return Err(format!("rank {r}: pairwise exchange got {from:?}, all_to_all_v {builtin_from:?}").into());
    }
    mine.sort_unstable();
    if let Some(k) = mine.iter().find(|&&k| bins.owner_of(k) != r) {
        return Err(format!("rank {r} got key {k:#x} owned by rank {}", bins.owner_of(*k)).into());
    }

    // Serial reference: this rank's piece is the next stretch of the sorted whole.
    let mut offset = [mine.len() as u64];
    world.exscan(&mut offset, ReduceOp::Sum)?;
    let mut all: Vec<u64> = (0..n).flat_map(|q| sort::keys_of(q, cfg.keys_per_rank, cfg.seed)).collect();
    all.sort_unstable();
    let start = offset[0] as usize;
    if all.get(start..start + mine.len()) != Some(&mine[..]) {
        return Err(format!("rank {r}: keys {start}..{} differ from the serial sort", start + mine.len()).into());
    }

    // Block transpose with the same exchange.
    let (cells, cell_counts) = transpose::pack(cfg.matrix, n, r);
    let ((recv, _), t_transpose) =
        best_of(cfg.reps, || pairwise_all_to_all_v(&world, &cells, &cell_counts, CELLS))?;
    if transpose::unpack(cfg.matrix, n, r, &recv) != transpose::expected(cfg.matrix, n, r) {
        return Err(format!("rank {r}: rows of the transpose differ from the serial transpose").into());
    }

    let mut load = [mine.len() as u64, byes as u64];
    world.reduce(&mut load, ReduceOp::Max, 0)?;
    let mut slowest = [t_pairwise.as_secs_f64(), t_builtin.as_secs_f64(), t_transpose.as_secs_f64()];
    world.reduce(&mut slowest, ReduceOp::Max, 0)?;
    if r == 0 {
        let [pw, bi, tr] = slowest.map(|s| s * 1e6);
        println!("{} rounds, at most {} bye(s) per rank; largest share {} of {} keys", Schedule::new(0, n).len(), load[1], load[0], n * cfg.keys_per_rank);
        println!("exchange: pairwise {pw:.0} us, all_to_all_v {bi:.0} us; transpose {0}x{0}: {tr:.0} us", cfg.matrix);
        println!("OK: histogram sort and transpose match all_to_all_v and the serial references on {n} ranks");
    }
    Ok(())
}
