//! A mixed workload for fault injection (`cargo xtask chaos`): collectives of several
//! sizes, a p2p ring, a subgroup, non-blocking ops, in a loop for `CHAOS_SECS` seconds.
//! Some rank gets SIGKILLed at a random moment; the others must end with that rank
//! named, fast, leaving nothing behind. Or (`--fault stop`) it is stopped for a while
//! and resumed: the job must end well.
//!
//! The one example not under `#[spmd(strict)]`, by design: its loop runs until a
//! deadline on the clock, which the compile-time check cannot evaluate (it leaves the
//! loop to the run-time checks, which are what this example exercises).
// Entries here exercise the run-time checks: what the compile-time check cannot follow
// in them is expected (its warnings are `deprecated` uses; docs/static-checks.md).
#![allow(deprecated)]

use dist_runtime::prelude::*;
use std::time::{Duration, Instant};

dist_runtime::group!(Half);
const RING: Tag<f32> = Tag::new(1);

#[spmd]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let secs: f64 = std::env::var("CHAOS_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(3.0);
    let (n, me) = (world.size(), world.rank());
    let half: Vec<usize> = (0..n.div_ceil(2)).collect();
    let sub = world.subgroup::<Half>(&half)?;
    let start = Instant::now();
    let mut step = 0usize;
    loop {
        // Whether to go on is rank 0's clock, for every rank: ranks reading their own
        // clocks would leave at different steps when one is held up (a stopped rank,
        // `cargo xtask chaos --fault stop`), and the rest would wait on it forever.
        let mut go = [u8::from(start.elapsed() < Duration::from_secs_f64(secs))];
        world.broadcast(&mut go, 0)?;
        if go[0] == 0 {
            break;
        }
        let len = [8usize, 4096, 200_000][step % 3];
        let mut v = vec![me as f32; len];
        world.all_reduce(&mut v, ReduceOp::Sum)?;
        let mut got = vec![0.0f32; len / 4];
        world.sendrecv((me + 1) % n, RING, &v[..len / 4], (me + n - 1) % n, &mut got)?;
        let mut b = vec![0u8; 1000];
        world.broadcast(&mut b, step % n)?;
        let mut all = vec![0u32; n * 64];
        world.all_to_all(&vec![me as u32; n * 64], &mut all)?;
        if let Some(sub) = &sub {
            let mut x = [1u64];
            sub.all_reduce_async(&mut x, ReduceOp::Sum)?.wait()?;
        }
        world.barrier()?;
        step += 1;
    }
    if me == 0 {
        println!("{step} steps");
    }
    Ok(())
}
