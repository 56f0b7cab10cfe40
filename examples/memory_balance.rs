//! Before sharding a model, inference servers check that every rank has about the same
//! free memory. Each rank reads its available memory (RAM from /proc/meminfo on the shm
//! backend), the ranks all_gather the figures and MIN/MAX all_reduce them, and the
//! program fails when one rank has under 90% of another's.
//!
//! `cargo xtask run -n 4 --example memory_balance`

use dist_runtime::prelude::*;

/// MemAvailable in MiB.
fn available_mib() -> Result<u64, String> {
    let info = std::fs::read_to_string("/proc/meminfo").map_err(|e| format!("cannot read /proc/meminfo: {e}"))?;
    let kib: u64 = info
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or("no MemAvailable line in /proc/meminfo")?;
    Ok(kib / 1024)
}

#[spmd(strict)]
fn main(world: Comm<World>) -> Result<(), String> {
    let err = |e: dist_runtime::Error| e.to_string();
    let free = available_mib()?;
    let mut all = vec![0u64; world.size()];
    world.all_gather(&[free], &mut all).map_err(err)?;
    let (mut lo, mut hi) = ([free], [free]);
    world.all_reduce(&mut lo, ReduceOp::Min).map_err(err)?;
    world.all_reduce(&mut hi, ReduceOp::Max).map_err(err)?;
    if world.rank() == 0 {
        for (r, f) in all.iter().enumerate() {
            println!("rank {r}: {f} MiB available ({} backend)", world.backend());
        }
        println!("min {} MiB, max {} MiB", lo[0], hi[0]);
    }
    if lo[0] * 10 < hi[0] * 9 {
        return Err(format!(
            "unbalanced memory: the poorest rank has {} MiB, under 90% of the richest's {} MiB",
            lo[0], hi[0]
        ));
    }
    Ok(())
}
