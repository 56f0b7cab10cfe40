//! Nothing of a job outlives it in the launching process: 200 launches in a loop leave
//! this process's file descriptors and threads flat (the store's socket, connections
//! and threads, the output pumps).

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
