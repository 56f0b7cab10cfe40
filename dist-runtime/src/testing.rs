//! Running distributed tests under plain `cargo test`: the runtime half of
//! `#[dist_runtime::test]`.

use crate::launch::Launch;
use std::time::Duration;

/// Runs the registered entry `entry` once per world size in `sizes`, as real rank
/// processes re-executed from the test binary, with cross-rank checks on and a
/// deadline of `timeout_secs` per size. Panics (failing the test) with the failing
/// rank, its status and every failing rank's output.
pub fn run_test(entry: &str, sizes: &[usize], timeout_secs: f64) {
    for &n in sizes {
        let mut launch = match Launch::entry(entry, n) {
            Ok(l) => l.capture(true).timeout(Duration::from_secs_f64(timeout_secs)),
            Err(e) => panic!("cannot launch {entry}: {e}"),
        };
        if std::env::var_os("DIST_DEBUG").is_none() {
            launch = launch.env("DIST_DEBUG", "check");
        }
        let report = match launch.run() {
            Ok(r) => r,
            Err(e) => panic!("cannot launch {entry} on {n} ranks: {e}"),
        };
        if !report.success() {
            panic!("{entry} failed on {n} rank(s):\n{}", report.summary());
        }
        // Shown with --nocapture / on failure of a later size.
        for r in &report.ranks {
            for line in r.output.lines() {
                println!("[n={n} rank {}] {line}", r.rank);
            }
        }
    }
}
