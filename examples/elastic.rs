//! Surviving a rank's death: data-parallel training (least squares by full-batch
//! gradient descent) that goes on when a rank is killed mid-step. A survivor whose op
//! fails with `PeerFailed` (or `Revoked`, when another survivor found out first) shrinks
//! the communicator to the live ranks, the survivors agree on the last step every one of
//! them finished, roll back to it, share out the dead rank's rows among themselves, and
//! go on. Every survivor ends with the weights serial training computes (within 1e-9):
//! the full batch's gradient does not depend on how its rows are split.
//!
//! `cargo xtask run -n 4 --example elastic --fault-tolerant -- --kill 2 --at-step 30`
//! (`--kill R --at-step S`: rank R aborts itself at step S; `--step-ms T`: sleep T ms a
//! step, so a kill from outside, as `cargo xtask chaos --continue` sends, lands mid-run).

use dist_runtime::prelude::*;

const ROWS: usize = 512;
const FEATURES: usize = 8;
const STEPS: usize = 60;
const LR: f64 = 0.1;

/// Row `i` of the data set, the same on every rank: features and target.
fn row(i: usize) -> ([f64; FEATURES], f64) {
    let mut x = [0.0; FEATURES];
    let mut h = (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    for v in x.iter_mut() {
        h ^= h >> 29;
        h = h.wrapping_mul(0xBF58_476D_1CE4_E5B9);
        *v = (h >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
    }
    let y = x.iter().enumerate().map(|(j, v)| (j as f64 + 1.0) * v).sum::<f64>() + 0.5;
    (x, y)
}

/// The gradient of the mean squared error's half over rows `rank, rank + n, …` (this
/// rank's share of a world of `n`), summed, not yet divided by the row count; the bias
/// is the last entry.
fn partial_gradient(w: &[f64], rank: usize, n: usize) -> Vec<f64> {
    let mut g = vec![0.0; FEATURES + 1];
    for i in (rank..ROWS).step_by(n) {
        let (x, y) = row(i);
        let err = x.iter().zip(w).map(|(a, b)| a * b).sum::<f64>() + w[FEATURES] - y;
        for j in 0..FEATURES {
            g[j] += err * x[j];
        }
        g[FEATURES] += err;
    }
    g
}

fn step(w: &mut [f64], g: &[f64]) {
    for (wi, gi) in w.iter_mut().zip(g) {
        *wi -= LR * gi / ROWS as f64;
    }
}

/// The same training in one process.
fn serial() -> Vec<f64> {
    let mut w = vec![0.0; FEATURES + 1];
    for _ in 0..STEPS {
        let g = partial_gradient(&w, 0, 1);
        step(&mut w, &g);
    }
    w
}

fn flag(args: &[String], name: &str) -> Option<usize> {
    let at = args.iter().position(|a| a == name)?;
    args.get(at + 1)?.parse().ok()
}

#[spmd]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let (kill, at_step, step_ms) = (flag(&args, "--kill"), flag(&args, "--at-step"), flag(&args, "--step-ms"));
    let me = world.rank();
    let mut comm = world;
    // The weights after the last finished step, and before it (a survivor may be one
    // step ahead of another when a rank dies inside a step's all-reduce).
    let (mut w, mut before) = (vec![0.0; FEATURES + 1], vec![0.0; FEATURES + 1]);
    let mut done = 0;
    let mut lost: Vec<usize> = Vec::new();
    while done < STEPS {
        if kill == Some(me) && at_step == Some(done) {
            std::process::abort(); // a crash: no goodbye to the peers
        }
        if let Some(ms) = step_ms {
            std::thread::sleep(std::time::Duration::from_millis(ms as u64));
        }
        let mut g = partial_gradient(&w, comm.rank(), comm.size());
        match comm.all_reduce(&mut g, ReduceOp::Sum) {
            Ok(()) => {
                before.clone_from(&w);
                step(&mut w, &g);
                done += 1;
            }
            Err(dist_runtime::Error::PeerFailed { .. } | dist_runtime::Error::Revoked { .. }) => {
                let gone: Vec<usize> = comm.failed_ranks()?.iter().map(|&r| comm.members()[r]).collect();
                comm = comm.shrink()?;
                lost.extend(gone);
                let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
                println!("elastic: recovered at unix_us={} on {} ranks", now.as_micros(), comm.size());
                // Resume from the last step every survivor finished.
                let mut agreed = [done as u64];
                comm.all_reduce(&mut agreed, ReduceOp::Min)?;
                if (agreed[0] as usize) < done {
                    w.clone_from(&before);
                    done = agreed[0] as usize;
                }
            }
            Err(e) => return Err(e),
        }
    }
    lost.sort_unstable();
    lost.dedup();
    let want = serial();
    let diff = w.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    assert!(diff <= 1e-9, "rank {me}: weights differ from serial training by {diff:e}");
    println!(
        "elastic: world rank {me}, one of {} live ranks: OK, weights match serial training (lost {lost:?})",
        comm.size()
    );
    Ok(())
}
