//! Hyperquicksort: recursive splitting sort over a hypercube of ranks, with the ranks
//! past the largest power of two folded in first. Checked against a serial sort.

mod config;
mod data;
mod exchange;
mod fold;
mod sorter;
mod verify;

use config::Config;
use dist_runtime::prelude::*;
use sorter::HyperSorter;
use verify::Verdict;

#[spmd]
fn main(world: Comm<World>) -> Result<(), Box<dyn std::error::Error>> {
    let cfg = Config::from_args(std::env::args().skip(1))?;
    let (r, n) = (world.rank(), world.size());

    let mut keys = data::initial_keys(&cfg, r);
    keys.sort_unstable();

    // Extra ranks hand their keys in, then the cube sorts.
    let keys = fold::fold_in(&world, keys)?;
    let active = fold::is_active(r, n);
    let sorter = HyperSorter::new(&world, active, cfg.pivot)?;
    let piece = match sorter {
        Some(mut s) => {
            let piece = s.sort(keys)?;
            if cfg.verbose {
                for st in &s.stats {
                    println!("rank {r}: cube of {} pivot {} kept {}", st.cube, st.pivot, st.kept);
                }
            }
            piece
        }
        None => keys,
    };

    // Balance: the largest and smallest piece over the world.
    let mut sizes = [piece.len() as u64, u64::MAX - piece.len() as u64];
    world.all_reduce(&mut sizes, ReduceOp::Max)?;
    let (largest, smallest) = (sizes[0], u64::MAX - sizes[1]);

    let (counts, all) = verify::collect(&world, &piece)?;
    let want = if r == 0 { data::serial_sorted(&cfg, n) } else { Vec::new() };
    match verify::compare(&counts, all.as_deref(), &want) {
        Verdict::Match { total, min_piece, max_piece } => println!(
            "OK hyperquicksort n={n} dist={:?} pivot={:?}: {total} keys sorted, pieces {min_piece}..{max_piece} (world max {largest}, min {smallest})",
            cfg.dist, cfg.pivot
        ),
        Verdict::Mismatch { at, got, want } => {
            return Err(format!("sorted output differs from the serial sort at {at}: got {got:?}, want {want:?}").into())
        }
        Verdict::NotRoot => {}
    }
    Ok(())
}
