//! What a distributed test costs: wall time of a 4-rank `#[dist_runtime::test]`-style
//! run whose body is one all_reduce, against the same body called in-process on a
//! world of one. `cargo bench -p dist-tests --bench harness` (add `--profile dev` for
//! the build `cargo test` uses).
// Entries here exercise the run-time checks: what the compile-time check cannot follow
// in them is expected (its warnings are `deprecated` uses; docs/static-checks.md).
#![allow(deprecated)]

use dist_runtime::prelude::*;
use std::time::{Duration, Instant};

#[spmd]
fn one_all_reduce(world: Comm<World>) {
    let mut x = vec![world.rank() as f32; 1024];
    world.all_reduce(&mut x, ReduceOp::Sum).unwrap();
    let n = world.size() as f32;
    assert_eq!(x[0], n * (n - 1.0) / 2.0);
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let iters = std::env::var("ITERS").ok().and_then(|s| s.parse().ok()).unwrap_or(20);
    let inproc = median(
        (0..iters)
            .map(|_| {
                let t = Instant::now();
                one_all_reduce(dist_runtime::init().unwrap());
                t.elapsed()
            })
            .collect(),
    );
    for n in [1usize, 2, 4, 8] {
        let spawned = median(
            (0..iters)
                .map(|_| {
                    let t = Instant::now();
                    dist_runtime::testing::run_test("one_all_reduce", &[n], 60.0);
                    t.elapsed()
                })
                .collect(),
        );
        println!(
            "{n} ranks: test run {:>8.2} ms, in-process 1-rank call {:>6.3} ms, overhead {:>8.2} ms (median of {iters})",
            spawned.as_secs_f64() * 1e3,
            inproc.as_secs_f64() * 1e3,
            (spawned - inproc).as_secs_f64() * 1e3
        );
    }
}
