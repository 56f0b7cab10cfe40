//! Nothing of a job outlives it in the launching process: 200 launches in a loop leave
//! this process's file descriptors and threads flat (the store's socket, connections
//! and threads, the output pumps).
// Entries here exercise the run-time checks: what the compile-time check cannot follow
// in them is expected (its warnings are `deprecated` uses; docs/static-checks.md).
#![allow(deprecated)]

use dist_runtime::prelude::*;
use dist_runtime::Launch;
use std::time::Duration;

#[spmd]
fn tiny(world: Comm<World>) -> dist_runtime::Result<()> {
    let mut x = [1u32];
    world.all_reduce(&mut x, ReduceOp::Sum)?;
    assert_eq!(x[0] as usize, world.size());
    Ok(())
}

fn fds_and_threads() -> (usize, usize) {
    let count = |d: &str| std::fs::read_dir(d).map(|r| r.count()).unwrap_or(0);
    (count("/proc/self/fd"), count("/proc/self/task"))
}

#[test]
fn launches_in_a_loop_leave_fds_and_threads_flat() {
    let run = |n| {
        let r = Launch::entry("resources::tiny", n).unwrap().capture(true).timeout(Duration::from_secs(60)).run();
        let r = r.unwrap();
        assert!(r.success(), "{}", r.summary());
    };
    run(2); // warm-up: whatever the first launch sets up once
    let before = fds_and_threads();
    for i in 0..200 {
        run(1 + i % 2);
    }
    let after = fds_and_threads();
    assert!(after.0 <= before.0 + 8 && after.1 <= before.1 + 8, "fds, threads: {before:?} before, {after:?} after");
}

/// A launch's debug text never shows the job token.
#[test]
fn a_launch_does_not_print_its_token() {
    let l = Launch::new("/bin/true", 2).env("DIST_JOB_TOKEN", "s3cr3t-t0ken").env_for(1, "DIST_JOB_TOKEN", "0th3r");
    let shown = format!("{l:?}");
    assert!(!shown.contains("s3cr3t") && !shown.contains("0th3r"), "{shown}");
    assert!(shown.contains("DIST_JOB_TOKEN"), "{shown}");
}

/// The CPUs this process may run on.
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is valid; sched_getaffinity only writes it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        assert_eq!(libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set), 0);
        (0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &set)).collect()
    }
}

/// How many CPUs the parent process (the launcher) may run on: `Cpus_allowed_list` in
/// its `/proc/<pid>/status`, e.g. `0-3,8`.
fn launcher_cpus() -> usize {
    let status = std::fs::read_to_string(format!("/proc/{}/status", std::os::unix::process::parent_id())).unwrap();
    let list = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).unwrap().trim();
    list.split(',')
        .map(|r| match r.split_once('-') {
            Some((a, b)) => b.parse::<usize>().unwrap() - a.parse::<usize>().unwrap() + 1,
            None => 1,
        })
        .sum()
}

/// Where a host's ranks outnumber the CPUs they may use, each rank is bound to one CPU,
/// round robin, so the ranks spread evenly (left to the kernel, 8 ranks on 2 cores landed
/// 4/4, 5/3 or 6/2 from launch to launch); where they fit, nothing is bound.
#[dist_runtime::test(ranks = [1, 2, 3, 4, 8])]
fn ranks_that_outnumber_the_cores_are_bound_one_per_cpu(world: Comm<World>) {
    if std::env::var_os("DIST_PIN").is_some() || world.backend() != "shm" {
        return; // the default is what is tested (mpirun binds by its own rules)
    }
    // The CPUs the job was given: the launching process's, before any rank bound itself.
    let online = launcher_cpus();
    let mine = allowed_cpus();
    let n = world.size();
    let me = [if mine.len() == 1 { mine[0] as u64 } else { u64::MAX }];
    let mut all = vec![0u64; n];
    world.all_gather(&me, &mut all).unwrap();
    if n > online {
        assert!(all.iter().all(|&c| c != u64::MAX), "every rank bound to one CPU: {all:?}");
        let mut per = std::collections::HashMap::new();
        for &c in &all {
            *per.entry(c).or_insert(0usize) += 1;
        }
        let (lo, hi) = (per.values().min().unwrap(), per.values().max().unwrap());
        assert!(per.len() == online.min(n) && hi - lo <= 1, "ranks per CPU as even as can be: {per:?}");
    } else if online > 1 {
        assert!(mine.len() > 1, "rank {} was bound to {mine:?} though its job fits the cores", world.rank());
    }
}
