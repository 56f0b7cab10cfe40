//! The "hello" of distributed programs: every rank introduces itself, rank 0 prints
//! the table, and an all_reduce of the ranks proves they all talk.
//!
//! `cargo xtask run -n 8 --example hello`

use dist_runtime::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Debug)]
struct Whoami {
    rank: usize,
    pid: u32,
    host: String,
    device: String,
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "localhost".into())
}

#[spmd(strict)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let me = Whoami {
        rank: world.rank(),
        pid: std::process::id(),
        host: hostname(),
        device: match world.device_kind() {
            Some(dev) => format!("gpu ({dev} for device buffers, {} for host buffers)", world.backend()),
            None => format!("cpu ({} backend)", world.backend()),
        },
    };
    let all = world.all_gather_object(&me)?;
    let mut sum = [world.rank() as u64];
    world.all_reduce(&mut sum, ReduceOp::Sum)?;
    let n = world.size() as u64;
    if sum[0] != n * (n - 1) / 2 {
        return Err(dist_runtime::Error::Mismatch {
            comm: "World".into(),
            msg: format!("sum of ranks is {} but should be {}", sum[0], n * (n - 1) / 2),
        });
    }
    if world.rank() == 0 {
        println!("hello from {} ranks", world.size());
        println!("{:>5}  {:>8}  {:<20}  device", "rank", "pid", "host");
        for w in &all {
            println!("{:>5}  {:>8}  {:<20}  {}", w.rank, w.pid, w.host, w.device);
        }
        println!("sum of ranks = {} (expected {})", sum[0], n * (n - 1) / 2);
    }
    Ok(())
}
