//! Running distributed tests under plain `cargo test`: the runtime half of
//! `#[dist_runtime::test]`.

use crate::launch::Launch;
use std::time::Duration;

/// Runs the registered entry `entry` once per world size in `sizes`, as real rank
/// processes re-executed from the test binary, with cross-rank checks on and a
/// deadline of `timeout_secs` per size. Panics (failing the test) with the failing
/// rank, its status and every failing rank's output; the panic is reported at the
/// test's own line (`#[track_caller]`), not here.
#[track_caller]
pub fn run_test(entry: &str, sizes: &[usize], timeout_secs: f64) {
    // One seed for every rank of the job, so property tests draw the same cases; printed
    // on failure, and taken from DIST_TEST_SEED when set, to replay a failure.
    let seed = std::env::var("DIST_TEST_SEED").ok().and_then(|s| s.parse::<u64>().ok()).unwrap_or_else(|| {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        (t.as_nanos() as u64) ^ ((std::process::id() as u64) << 32)
    });
    for &n in sizes {
        let mut launch = match Launch::entry(entry, n) {
            Ok(l) => {
                l.capture(true).timeout(Duration::from_secs_f64(timeout_secs)).env("DIST_TEST_SEED", seed.to_string())
            }
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
            panic!(
                "{entry} failed with {n} ranks: {}\n(replay with DIST_TEST_SEED={seed}; the whole report follows)\n{}",
                report.headline(),
                report.summary()
            );
        }
        // Shown with --nocapture / on failure of a later size.
        for r in &report.ranks {
            for line in r.output.lines() {
                println!("[n={n} rank {}] {line}", r.rank);
            }
        }
    }
}

/// The simulated device's buffer (feature `sim-device`; see [`SimBuf`]).
#[cfg(feature = "sim-device")]
pub use crate::buffer::SimBuf;
