//! The launcher and the test harness themselves: a failing, panicking, killed or
//! deadlocked rank ends the job fast, names the rank that failed first, and says why.
// Entries here exercise the run-time checks: what the compile-time check cannot follow
// in them is expected (its warnings are `deprecated` uses; docs/static-checks.md).
#![allow(deprecated)]

use dist_runtime::prelude::*;
use dist_runtime::Launch;
use std::time::Duration;

#[spmd]
fn error_on_rank_2(world: Comm<World>) -> Result<(), String> {
    if world.rank() == 2 {
        return Err("bad thing on purpose".into());
    }
    world.barrier().map_err(|e| e.to_string())
}

#[spmd]
fn panic_on_rank_1(world: Comm<World>) {
    if world.rank() == 1 {
        panic!("boom on purpose");
    }
    let mut x = [0u8; 4];
    world.all_reduce(&mut x, ReduceOp::Sum).unwrap();
}

// Wrong on purpose: the run-time checks must catch it, so the compile-time one is off.
#[spmd(unchecked)]
fn sigkill_on_rank_1(world: Comm<World>) -> dist_runtime::Result<()> {
    const T: Tag<u8> = Tag::new(1);
    if world.rank() == 1 {
        std::process::Command::new("kill").args(["-9", &std::process::id().to_string()]).status().unwrap();
        std::thread::sleep(Duration::from_secs(10));
    }
    world.recv(1, T, &mut [0u8; 1])
}

// Wrong on purpose: the run-time checks must catch it, so the compile-time one is off.
#[spmd(unchecked)]
fn deadlock_both_recv(world: Comm<World>) -> dist_runtime::Result<()> {
    const T: Tag<u8> = Tag::new(1);
    world.recv(1 - world.rank(), T, &mut [0u8; 1]) // @both-recv
}

// Wrong on purpose: the run-time checks must catch it, so the compile-time one is off.
#[spmd(unchecked)]
fn half_reach_a_collective(world: Comm<World>) -> dist_runtime::Result<()> {
    if world.rank().is_multiple_of(2) {
        world.barrier()?;
    }
    std::thread::sleep(Duration::from_secs(3));
    Ok(())
}

dist_runtime::group!(Pair);

/// A little of everything, for the trace test.
#[spmd]
fn traced_ops(world: Comm<World>) -> dist_runtime::Result<()> {
    const RING: Tag<f32> = Tag::new(9);
    let (r, n) = (world.rank(), world.size());
    let mut x = vec![1.0f32; 100];
    world.all_reduce(&mut x, ReduceOp::Sum)?;
    let mut got = [0.0f32; 3];
    world.sendrecv((r + 1) % n, RING, &[r as f32; 3], (r + n - 1) % n, &mut got)?;
    let pair = world.split::<Pair>((r / 2) as u32, r as i64)?;
    pair.barrier()?;
    world.broadcast(&mut x[..10], 0)
}

/// "tests/harness.rs:L" of the line of this file marked with `marker`.
fn at(marker: &str) -> String {
    let src = include_str!("harness.rs");
    let needle = format!("// {marker}\n");
    let line = src.lines().position(|l| format!("{l}\n").ends_with(&needle)).expect("marker in harness.rs");
    format!("tests/harness.rs:{}", line + 1)
}

fn run(entry: &str, n: usize, timeout: f64) -> dist_runtime::Report {
    run_env(entry, n, timeout, &[])
}

/// Runs `harness::entry` on n ranks with output captured and extra environment.
fn run_env(entry: &str, n: usize, timeout: f64, env: &[(&str, &str)]) -> dist_runtime::Report {
    let mut l = Launch::entry(&format!("harness::{entry}"), n)
        .unwrap()
        .capture(true)
        .env("RUST_BACKTRACE", "0")
        .timeout(Duration::from_secs_f64(timeout));
    for (k, v) in env {
        l = l.env(k, v);
    }
    l.run().unwrap()
}

/// How long a job took, for the bounds on how fast a failure is named: the launch's time,
/// less the grace the launcher gives mpirun's own teardown where it hung (Open MPI 4.1's
/// mpirun can crash in `PMIx_Finalize` after `MPI_Abort`, seen once across the two
/// namespace hosts; the launcher stops it after 4 s and the report says so): that time
/// is Open MPI's, not dist's.
fn took(r: &dist_runtime::Report) -> Duration {
    if r.summary().contains("Open MPI's teardown hung") {
        r.elapsed.saturating_sub(Duration::from_secs(4))
    } else {
        r.elapsed
    }
}

#[test]
fn an_error_names_the_rank_and_stops_the_rest() {
    let r = run("error_on_rank_2", 4, 30.0);
    assert!(!r.success());
    assert_eq!(r.first_failure, Some(2), "{}", r.summary());
    assert_eq!(r.ranks[2].code, Some(1));
    assert!(r.ranks[2].output.contains("[rank 2] error: bad thing on purpose"), "{}", r.summary());
    // The peers stopped because rank 2 failed, and their exit code says so although the
    // entry returns `Result<(), String>` (a type that cannot carry it).
    if !std::env::var("DIST_BACKEND").is_ok_and(|b| b.eq_ignore_ascii_case("mpi")) {
        for x in r.ranks.iter().filter(|x| x.rank != 2) {
            assert!(x.code == Some(3) || x.killed_by_launcher, "rank {}: {}", x.rank, r.summary());
        }
    }
    assert!(took(&r) < Duration::from_secs(5), "took {:?}", r.elapsed);
    // Peers waiting in the barrier learn why (looked for in every peer's output: mpirun
    // can interleave one rank's stderr line into another's capture).
    let told = |x: &dist_runtime::launch::RankExit| {
        x.output.contains("rank 2 (of World) failed: returned an error: bad thing on purpose")
    };
    assert!(r.ranks.iter().filter(|x| x.rank != 2).any(told) || r.ranks[0].killed_by_launcher, "{}", r.summary());
}

#[test]
fn a_panic_reaches_the_peers_with_its_message() {
    let r = run("panic_on_rank_1", 3, 30.0);
    assert_eq!(r.first_failure, Some(1), "{}", r.summary());
    assert_eq!(r.ranks[1].code, Some(101));
    assert!(r.summary().contains("rank 1 failed first: panicked"), "{}", r.summary());
    // Looked for in every peer's output (mpirun can interleave stderr lines of ranks).
    let told =
        |x: &dist_runtime::launch::RankExit| x.output.contains("PeerFailed") && x.output.contains("boom on purpose");
    assert!(r.ranks.iter().filter(|x| x.rank != 1).any(told) || r.ranks[0].killed_by_launcher, "{}", r.summary());
    assert!(took(&r) < Duration::from_secs(5), "took {:?}", r.elapsed);
}

#[test]
fn a_killed_rank_is_detected() {
    let r = run("sigkill_on_rank_1", 2, 30.0);
    assert_eq!(r.first_failure, Some(1), "{}", r.summary());
    assert_eq!(r.ranks[1].signal, Some(9));
    assert!(r.ranks[0].output.contains("is gone") || r.ranks[0].killed_by_launcher, "{}", r.summary());
    assert!(took(&r) < Duration::from_secs(5), "took {:?}", r.elapsed);
}

// Wrong on purpose: the last rank receives from itself what it never sent itself.
#[spmd(unchecked)]
fn recv_from_itself(world: Comm<World>) -> dist_runtime::Result<()> {
    const T: Tag<u32> = Tag::new(6);
    let me = world.rank();
    if me == world.size() - 1 {
        let mut got = [0u32; 4];
        world.recv(me, T, &mut got)?; // @self-recv
    }
    world.barrier()
}

/// A rank receiving from itself with nothing sent to itself waits on itself: a deadlock
/// named in about a second (the peers, left in the barrier, stop as its victims), not a
/// wait until the deadline.
#[test]
fn a_receive_from_itself_is_a_deadlock() {
    for n in [1, 3] {
        let r = run_env("recv_from_itself", n, 60.0, &[("DIST_TIMEOUT", "60")]);
        let all = r.summary();
        println!("recv from itself, {n} ranks: ended in {:?}", r.elapsed);
        assert!(!r.success(), "{all}");
        assert!(all.contains("deadlock detected in recv"), "{all}");
        assert!(all.contains(&format!("rank {} waits in recv from rank {}", n - 1, n - 1)), "{all}");
        assert_eq!(r.first_failure.map(|i| r.ranks[i].rank), Some(n - 1), "{all}");
        assert!(took(&r) < Duration::from_secs(10), "took {:?}: {all}", r.elapsed);
    }
}

// Wrong on purpose: rank 0 posts many sends rank 1 never receives (it waits in a
// barrier), then fails with its own error, dropping them all unwaited.
#[spmd(unchecked)]
fn fails_with_many_sends_pending(world: Comm<World>) -> Result<(), String> {
    const T: Tag<u8> = Tag::new(4);
    if world.rank() == 0 {
        let data = vec![7u8; 64 << 10];
        let mut pending = Vec::new();
        for _ in 0..512 {
            pending.push(world.isend(1, T, &data).map_err(|e| e.to_string())?);
        }
        return Err("bad input on purpose, with 512 sends pending".into());
    }
    world.barrier().map_err(|e| e.to_string())
}

/// A rank that fails with hundreds of sends pending (dropped unwaited as its error
/// leaves) is named as the cause, in about a second: the first dropped send that cannot
/// complete is its failure (the detector finds it waiting on the peer it left in a
/// barrier), and the rest are let go at once, so it does not become a victim of that peer.
#[test]
fn a_rank_failing_with_many_sends_pending_is_named_fast() {
    let r = run_env("fails_with_many_sends_pending", 2, 60.0, &[("DIST_TIMEOUT", "30")]);
    let all = r.summary();
    println!("a rank failing with 512 sends pending: ended in {:?}", r.elapsed);
    assert_eq!(r.first_failure.map(|i| r.ranks[i].rank), Some(0), "{all}");
    assert!(!r.ranks[0].killed_by_launcher && r.ranks[0].code != Some(3), "{all}");
    assert!(all.contains("tests/harness.rs"), "{all}");
    assert!(took(&r) < Duration::from_secs(5), "took {:?}: {all}", r.elapsed);
}

// Wrong on purpose: rank 1 ends its process inside the job, as `DIST_TEST_EXIT` says
// (`exit(0)`, `exit(7)`, `abort()`), while its peers wait for it in a barrier.
#[spmd(unchecked)]
fn exits_mid_job(world: Comm<World>) -> dist_runtime::Result<()> {
    let mut x = [1u32];
    world.all_reduce(&mut x, ReduceOp::Sum)?;
    if world.rank() == 1 {
        match std::env::var("DIST_TEST_EXIT").as_deref() {
            Ok("abort") => std::process::abort(),
            Ok(code) => std::process::exit(code.parse().unwrap()),
            Err(_) => {}
        }
    }
    world.barrier()
}

/// A rank whose process ends inside the job without a word — `exit(0)`, `exit(7)`,
/// `abort()` — is the cause the launcher names, and its peers stop naming it, in about a
/// second (on shm and on MPI, whose launcher sees only mpirun).
#[test]
fn a_rank_that_exits_mid_job_is_named() {
    for how in ["0", "7", "abort"] {
        let r = run_env("exits_mid_job", 3, 30.0, &[("DIST_TEST_EXIT", how), ("DIST_TIMEOUT", "20")]);
        let all = r.summary();
        println!("rank 1 ends with {how} mid-job, 3 ranks: ended in {:?}", r.elapsed);
        assert!(!r.success(), "{how}: {all}");
        assert_eq!(r.first_failure.map(|i| r.ranks[i].rank), Some(1), "{how}: {all}");
        assert!(!all.contains("deadlock"), "{how}: {all}");
        assert!(took(&r) < Duration::from_secs(6), "{how}: took {:?}: {all}", r.elapsed);
    }
}

/// A deadlock is found by state, not at the deadline: both ranks wait in recv from each
/// other, and each hears of it in about a second (the default deadline is 300 s), with
/// both call sites and the cycle; the launcher names one rank as the cause.
#[test]
fn a_deadlock_is_named_within_a_second_not_at_the_deadline() {
    let r = run_env("deadlock_both_recv", 2, 60.0, &[("DIST_TIMEOUT", "300")]);
    assert!(!r.success());
    let all = r.summary();
    println!("recv/recv deadlock, 2 ranks: ended in {:?}", r.elapsed);
    assert!(all.contains(&format!("deadlock detected in recv at {}", at("@both-recv"))), "{all}");
    assert!(
        all.contains(&format!("rank 0 waits in recv from rank 1 with tag 1 on World ({})", at("@both-recv"))),
        "{all}"
    );
    assert!(
        all.contains(&format!("rank 1 waits in recv from rank 0 with tag 1 on World ({})", at("@both-recv"))),
        "{all}"
    );
    assert!(all.contains("wait-for cycle 0 → 1 → 0"), "{all}");
    assert_eq!(r.first_failure.map(|i| r.ranks[i].rank), Some(0), "{all}");
    assert!(took(&r) < Duration::from_secs(5), "took {:?}: {all}", r.elapsed);
}

// Wrong on purpose: rank 0 calls a collective the others skip; they wait for a message
// rank 0 would send after it.
#[spmd(unchecked)]
fn collective_in_a_branch(world: Comm<World>) -> dist_runtime::Result<()> {
    const T: Tag<u32> = Tag::new(3);
    let mut x = [1u32];
    if world.rank() == 0 {
        world.all_reduce(&mut x, ReduceOp::Sum)?; // @branch-all-reduce
        for r in 1..world.size() {
            world.send(r, T, &x)?;
        }
    } else {
        world.recv(0, T, &mut x)?; // @branch-recv
    }
    Ok(())
}

/// The classic bug of a collective inside `if rank == 0`: found in about a second on
/// every rank, naming rank 0 (the one that went another way) and both lines; the
/// launcher names rank 0, not a victim.
#[test]
fn a_collective_in_a_branch_names_the_odd_rank_and_both_lines() {
    for n in [2, 4, 8] {
        let r = run_env("collective_in_a_branch", n, 60.0, &[("DIST_TIMEOUT", "300")]);
        let all = r.summary();
        println!("collective in a branch, {n} ranks: ended in {:?}", r.elapsed);
        assert_eq!(r.first_failure.map(|i| r.ranks[i].rank), Some(0), "n={n}: {all}");
        let who = if n == 2 { "rank 1".to_string() } else { format!("ranks 1–{}", n - 1) };
        let zero =
            format!("rank 0 waits in all_reduce on World ({}, collective #1) for {who}", at("@branch-all-reduce"));
        assert!(all.contains(&zero), "n={n}: {zero}: {all}");
        // The story is a snapshot: under load a rank may not have published its wait yet
        // when a cycle through another is confirmed, so the recv group may name only some
        // of ranks 1.. (rank 0's own wait, above, names them all).
        let rest = format!("in recv from rank 0 with tag 3 on World ({})", at("@branch-recv"));
        let story = all.lines().find(|l| l.contains("deadlock detected")).unwrap_or("");
        assert!(story.contains(&rest), "n={n}: {rest}: {all}");
        for x in r.ranks.iter().filter(|x| x.rank != 0) {
            assert!(x.code == Some(3) || x.killed_by_launcher, "n={n}: rank {}: {all}", x.rank);
        }
        // The flight recorders, lined up: where each rank last was on World.
        let rec = format!(
            "World: rank 0 was last at #1 all_reduce ({}, not completed); {who} {} last at #1 recv ({}, not completed)",
            at("@branch-all-reduce"),
            if n == 2 { "was" } else { "were" },
            at("@branch-recv")
        );
        assert!(r.flight.as_deref().is_some_and(|f| f.contains(&rec)), "n={n}: {rec}: {all}");
        assert!(took(&r) < Duration::from_secs(5), "n={n}: took {:?}: {all}", r.elapsed);
    }
}

/// A helper the entry below calls: errors inside it name its line and the caller's.
fn sum_in_helper(world: &Comm<World>) -> dist_runtime::Result<()> {
    let mut x = [1u32];
    world.all_reduce(&mut x, ReduceOp::Sum) // @helper-all-reduce
}

// Wrong on purpose: rank 0 reaches a collective (through a helper) the others skip.
#[spmd(unchecked)]
fn collective_in_a_helper(world: Comm<World>) -> dist_runtime::Result<()> {
    const T: Tag<u32> = Tag::new(3);
    if world.rank() == 0 {
        sum_in_helper(&world)?; // @helper-call
    } else {
        world.recv(0, T, &mut [0u32])?;
    }
    Ok(())
}

/// An error inside the user's helper names the helper's line and the line that called
/// it (read from a backtrace as the error leaves the op, where debug info has them).
#[test]
fn an_error_in_a_helper_names_the_helper_and_its_caller() {
    let r = run_env("collective_in_a_helper", 2, 60.0, &[("DIST_TIMEOUT", "300")]);
    let all = r.summary();
    let want = format!(
        "deadlock detected in all_reduce at {}, called from {} on World",
        at("@helper-all-reduce"),
        at("@helper-call")
    );
    // In the whole report: mpirun can interleave one rank's stderr into another's capture.
    assert!(all.contains(&want), "{want}: {all}");
    assert_eq!(r.first_failure.map(|i| r.ranks[i].rank), Some(0), "{all}");
}

// Wrong on purpose: rank 0 waits in a world barrier while rank 1 waits for it in their
// pair's barrier: a cycle across two communicators.
#[spmd(unchecked)]
fn cycle_across_communicators(world: Comm<World>) -> dist_runtime::Result<()> {
    let r = world.rank();
    let pair = world.split::<Pair>((r / 2) as u32, r as i64)?;
    if r == 0 {
        world.barrier()?; // @cross-world-0
        pair.barrier()
    } else {
        pair.barrier()?; // @cross-pair
        world.barrier() // @cross-world
    }
}

/// Waits on different communicators are one graph (world ranks): rank 0 in the world's
/// barrier and rank 1 in its pair's are found deadlocked together.
#[test]
fn a_cycle_across_communicators_is_found() {
    let r = run_env("cycle_across_communicators", 4, 60.0, &[("DIST_TIMEOUT", "300")]);
    let all = r.summary();
    println!("cycle across communicators, 4 ranks: ended in {:?}", r.elapsed);
    assert!(
        all.contains(&format!("rank 0 waits in barrier on World ({}, collective #2) for rank 1", at("@cross-world-0"))),
        "{all}"
    );
    assert!(
        all.contains(&format!(
            "rank 1 waits in barrier on Pair{{0,1}} ({}, collective #1) for rank 0",
            at("@cross-pair")
        )),
        "{all}"
    );
    // Ranks 2 and 3 (stuck behind the cycle) are in the story once they have published
    // their waits, which under load may come after the verdict: when named, named right.
    if all.contains(&format!("({}, collective #2) for rank 1", at("@cross-world"))) {
        assert!(
            all.contains(&format!("wait in barrier on World ({}, collective #2) for rank 1", at("@cross-world"))),
            "{all}"
        );
    }
    assert!(all.contains("wait-for cycle 0 → 1 → 0"), "{all}");
    assert_eq!(r.first_failure.map(|i| r.ranks[i].rank), Some(0), "{all}");
    assert!(took(&r) < Duration::from_secs(5), "took {:?}: {all}", r.elapsed);
}

// Wrong on purpose: as `cycle_across_communicators`, with rank 1 waiting on its pair's
// collective through a request (`all_reduce_async(..).wait()`, as a DDP gradient
// all-reduce does): the worker that runs it waits on the rank's behalf.
#[spmd(unchecked)]
fn cycle_through_an_async_wait(world: Comm<World>) -> dist_runtime::Result<()> {
    let r = world.rank();
    let pair = world.split::<Pair>((r / 2) as u32, r as i64)?;
    let mut x = [r as f64];
    if r == 0 {
        world.barrier()?; // @async-world-0
        pair.all_reduce(&mut x, ReduceOp::Sum)
    } else {
        pair.all_reduce_async(&mut x, ReduceOp::Sum)?.wait()?; // @async-pair
        world.barrier()
    }
}

/// A rank parked on a non-blocking collective's `wait` is blocked in that collective:
/// the cycle through it is named as the blocking form's is, not left to the deadline.
#[test]
fn a_cycle_through_an_async_wait_is_found() {
    let r = run_env("cycle_through_an_async_wait", 4, 60.0, &[("DIST_TIMEOUT", "300")]);
    let all = r.summary();
    println!("cycle through an async wait, 4 ranks: ended in {:?}", r.elapsed);
    assert!(all.contains("deadlock"), "{all}");
    assert!(all.contains("wait-for cycle 0 → 1 → 0"), "{all}");
    assert!(all.contains(&format!("rank 1 waits in all_reduce_async on Pair{{0,1}} ({}", at("@async-pair"))), "{all}");
    assert!(took(&r) < Duration::from_secs(30), "took {:?}: {all}", r.elapsed);
}

#[test]
fn a_collective_reached_by_half_the_ranks_times_out_naming_them() {
    if shm_only("a_collective_reached_by_half_the_ranks_times_out_naming_them") {
        return;
    }
    let r = run_env("half_reach_a_collective", 4, 20.0, &[("DIST_TIMEOUT", "1")]);
    let all = r.summary();
    assert!(all.contains("waits in barrier for rank(s) 1, 3"), "{all}");
    assert!(all.contains("rank 1 is not blocked in World") && !all.contains("deadlock"), "{all}");
}

#[test]
fn the_test_harness_fails_with_the_ranks_report() {
    let got = std::panic::catch_unwind(|| dist_runtime::testing::run_test("harness::panic_on_rank_1", &[2], 30.0));
    let msg = *got.expect_err("must fail").downcast::<String>().unwrap();
    // The first line names the failing rank and its own message and line.
    let first = msg.lines().next().unwrap_or_default();
    assert!(
        first.contains("failed with 2 ranks: rank 1 of 2")
            && first.contains("boom on purpose")
            && first.contains(".rs:"),
        "{msg}"
    );
    assert!(msg.contains("DIST_TEST_SEED="), "{msg}");
}

#[test]
fn the_harness_timeout_kills_a_hung_job() {
    let r = run_env("half_reach_a_collective", 2, 1.5, &[("DIST_TIMEOUT", "100")]);
    assert!(r.timed_out && !r.success());
    assert!(took(&r) < Duration::from_secs(4), "took {:?}", r.elapsed);
}

#[test]
fn without_environment_a_program_is_a_world_of_one() {
    let world = dist_runtime::init().unwrap();
    assert_eq!((world.rank(), world.size()), (0, 1));
    let mut v = [3.0f32, 4.0];
    world.all_reduce(&mut v, ReduceOp::Avg).unwrap();
    assert_eq!(v, [3.0, 4.0]);
}

#[test]
fn unknown_entry_is_a_clear_error() {
    let r = Launch::entry("harness::no_such_entry", 1).unwrap().capture(true).run().unwrap();
    assert_eq!(r.ranks[0].code, Some(2));
    assert!(r.ranks[0].output.contains("no #[spmd] entry named"), "{}", r.ranks[0].output);
}

#[test]
fn nothing_is_left_in_dev_shm() {
    let before: Vec<_> =
        std::fs::read_dir("/dev/shm").map(|d| d.flatten().map(|e| e.file_name()).collect()).unwrap_or_default();
    let r = run("error_on_rank_2", 3, 30.0);
    assert!(!r.success());
    let after: Vec<_> =
        std::fs::read_dir("/dev/shm").map(|d| d.flatten().map(|e| e.file_name()).collect()).unwrap_or_default();
    let new: Vec<_> = after.iter().filter(|f| !before.contains(f) && f.to_string_lossy().contains("dist")).collect();
    assert!(new.is_empty(), "left behind: {new:?}");
}

#[spmd]
fn square_of_rank_sum(world: Comm<World>) -> dist_runtime::Result<(usize, u64)> {
    let mut x = [world.rank() as u64];
    world.all_reduce(&mut x, ReduceOp::Sum)?;
    Ok((world.rank(), x[0] * x[0]))
}

#[test]
fn launch_returns_each_ranks_value() {
    let got = dist_runtime::launch(4, square_of_rank_sum).unwrap();
    assert_eq!(got, (0..4).map(|r| (r, 36)).collect::<Vec<_>>());
}

#[test]
fn launch_names_the_first_failure() {
    match dist_runtime::launch(4, error_on_rank_2) {
        Err(dist_runtime::Error::RankFailed { rank: 2, n: 4, status, message }) => {
            assert_eq!(status, "exit code 1");
            assert!(message.contains("bad thing on purpose"), "{message}");
        }
        other => panic!("expected RankFailed on rank 2, got {other:?}"),
    }
}

#[test]
fn launch_refuses_a_function_that_is_not_an_entry() {
    fn plain(_: Comm<World>) {}
    let e = dist_runtime::launch(2, plain).unwrap_err().to_string();
    assert!(e.contains("annotate it with #[spmd]"), "{e}");
}

#[test]
fn dist_trace_writes_every_op_of_every_rank() {
    let dir = std::env::temp_dir().join(format!("dist-trace-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let r = run_env("traced_ops", 4, 60.0, &[("DIST_TRACE", dir.to_str().unwrap())]);
    assert!(r.success(), "{}", r.summary());
    for rank in 0..4 {
        let text = std::fs::read_to_string(dir.join(format!("rank-{rank}.jsonl"))).unwrap();
        let evs: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let names: Vec<&str> = evs.iter().map(|e| e["name"].as_str().unwrap()).collect();
        // split = an all_gather of colors, then the child's creation; the ring sendrecv
        // is a posted recv, a send and its wait.
        for want in ["all_reduce", "all_gather", "split", "barrier", "broadcast"] {
            assert!(names.contains(&want), "rank {rank}: {names:?}");
        }
        assert!(names.iter().any(|n| n.contains("send")) && names.iter().any(|n| n.contains("recv")), "{names:?}");
        for e in &evs {
            assert_eq!(e["pid"].as_u64(), Some(rank as u64), "{e}");
            assert_eq!(e["ph"], "X");
            assert!(e["dur"].as_f64().unwrap() >= 0.0 && e["ts"].as_f64().unwrap() > 1e15, "{e}");
        }
        let ar = evs.iter().find(|e| e["name"] == "all_reduce").unwrap();
        assert_eq!((ar["args"]["bytes"].as_u64(), ar["args"]["op"].as_str()), (Some(400), Some("Sum")), "{ar}");
        let bar = evs.iter().find(|e| e["name"] == "barrier").unwrap();
        assert!(bar["args"]["comm"].as_str().unwrap().starts_with("World/Pair"), "{bar}");
        let bc = evs.iter().find(|e| e["name"] == "broadcast").unwrap();
        assert_eq!((bc["args"]["bytes"].as_u64(), bc["args"]["root"].as_u64()), (Some(40), Some(0)), "{bc}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Under `DIST_TRACE=DIR`, each failing rank also leaves its flight recorder in
/// `DIR/flight-<rank>.tsv`, which `cargo spmd trace DIR` (and `cargo xtask trace`) lines
/// up: who diverged where, after the job. Non-blocking ops and their waits are recorded.
#[test]
fn failing_ranks_leave_their_flight_records_beside_the_trace() {
    let dir = std::env::temp_dir().join(format!("dist-flight-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let r =
        run_env("collective_in_a_branch", 3, 60.0, &[("DIST_TIMEOUT", "300"), ("DIST_TRACE", dir.to_str().unwrap())]);
    assert!(!r.success());
    let dumps: Vec<(usize, String)> =
        (0..3).filter_map(|k| Some((k, std::fs::read_to_string(dir.join(format!("flight-{k}.tsv"))).ok()?))).collect();
    assert_eq!(dumps.len(), 3, "every failing rank leaves its record: {}", r.summary());
    let lined = dist_runtime::line_up_flight_records(&dumps);
    let want = format!(
        "World: rank 0 was last at #1 all_reduce ({}, not completed); ranks 1, 2 were last at #1 recv ({}, not completed)",
        at("@branch-all-reduce"),
        at("@branch-recv")
    );
    assert!(lined.contains(&want), "{want}: {lined}");
    let _ = std::fs::remove_dir_all(&dir);
}

// Wrong on purpose: rank 1 waits for a message rank 0 never sends, after non-blocking ops.
#[spmd(unchecked)]
fn stuck_in_a_request_wait(world: Comm<World>) -> dist_runtime::Result<()> {
    const T: Tag<u32> = Tag::new(4);
    let mut got = [0u32];
    if world.rank() == 1 {
        let req = world.irecv(0, T, &mut got)?;
        req.wait()?; // @irecv-wait
    } else {
        world.recv(1, T, &mut got)?; // @recv-from-1
    }
    Ok(())
}

/// The waits of non-blocking ops are in the flight recorder, at the wait's own line.
#[test]
fn request_waits_are_in_the_flight_recorder() {
    let r = run_env("stuck_in_a_request_wait", 2, 60.0, &[("DIST_TIMEOUT", "300")]);
    let all = r.summary();
    let want = format!(
        "rank 0 was last at #1 recv ({}, not completed); rank 1 was last at #2 irecv.wait ({}, not completed)",
        at("@recv-from-1"),
        at("@irecv-wait")
    );
    assert!(r.flight.as_deref().is_some_and(|f| f.contains(&want)), "{want}: {all}");
}

#[test]
fn a_bad_trace_directory_is_a_clear_error() {
    let r = run_env("traced_ops", 2, 60.0, &[("DIST_TRACE", "/proc/no-such-dir/trace")]);
    assert!(!r.success());
    assert!(r.summary().contains("DIST_TRACE=/proc/no-such-dir/trace: cannot create the directory"), "{}", r.summary());
}

/// Diagnostics only the shared-memory backend gives (a killed or stopped peer's process,
/// what never reached a rank, the wait-for graph at the deadline): MPI shows no peer's
/// process or buffers (docs/design.md, "MPI"). Deadlocks, failures and early returns are
/// named on both. True (and says so) when the suite runs on MPI.
fn shm_only(test: &str) -> bool {
    let mpi = std::env::var("DIST_BACKEND").is_ok_and(|b| b.eq_ignore_ascii_case("mpi"));
    if mpi {
        println!("{test}: the shared-memory backend's diagnostics; skipped on DIST_BACKEND=mpi");
    }
    mpi
}

#[spmd]
fn barrier_once(world: Comm<World>) -> dist_runtime::Result<()> {
    world.barrier()
}

/// Ranks on two hosts with the shared-memory backend: every rank stops at init with one
/// error naming both hosts and the feature to use, instead of failing to open a segment
/// on another machine (a host identity per rank stands in for two hosts here;
/// scripts/two-hosts.sh does it with real namespaces).
#[test]
fn a_job_spanning_hosts_on_shm_fails_at_init_naming_them() {
    if shm_only("a_job_spanning_hosts_on_shm_fails_at_init_naming_them") {
        return;
    }
    let r = Launch::entry("harness::barrier_once", 4)
        .unwrap()
        .capture(true)
        .env("DIST_BACKEND", "shm")
        .env_for(0, "DIST_HOST_ID", "node-a")
        .env_for(1, "DIST_HOST_ID", "node-a")
        .env_for(2, "DIST_HOST_ID", "node-b")
        .env_for(3, "DIST_HOST_ID", "node-b")
        .timeout(Duration::from_secs(60))
        .run()
        .unwrap();
    assert!(!r.success());
    for rank in &r.ranks {
        let out = &rank.output;
        assert!(
            out.contains("this job spans 2 hosts") && out.contains("node-a") && out.contains("node-b"),
            "rank {}: {out}",
            rank.rank
        );
        assert!(out.contains("--features dist-runtime/mpi"), "rank {}: {out}", rank.rank);
    }
    assert!(took(&r) < Duration::from_secs(10), "took {:?}", r.elapsed);
}

// Wrong on purpose (the last rank comes to the creation late): checks off, so the
// creation itself is the first thing the ranks meet.
#[spmd(unchecked)]
fn late_to_creation(world: Comm<World>) -> dist_runtime::Result<()> {
    let last = world.size() - 1;
    if world.rank() == last {
        std::thread::sleep(Duration::from_secs(8));
    }
    let pair = world.subgroup::<Pair>(&[0, last])?;
    if let Some(p) = pair {
        p.barrier()?;
    }
    Ok(())
}

/// Communicator creation is bounded like every wait, on every backend (on MPI,
/// `MPI_Comm_split` has no nonblocking form: it runs on a helper thread the rank waits
/// for with its deadline, and a rank whose call never returned still ends the job).
#[test]
fn a_member_late_to_communicator_creation_is_a_timeout() {
    let r = run_env("late_to_creation", 3, 60.0, &[("DIST_TIMEOUT", "2"), ("DIST_DEBUG", "off")]);
    println!("{}", r.summary());
    assert!(!r.success());
    let i = r.first_failure.expect("a failing rank");
    assert!(r.ranks[i].rank < 2, "{}", r.summary());
    // The ranks that waited say so. Under mpirun their stderr lines can interleave into
    // another rank's captured output (seen: rank 0's line inside rank 1's), so look in
    // every waiting rank's output, not only the first failure's.
    let waited: String = r.ranks.iter().filter(|k| k.rank < 2).map(|k| k.output.as_str()).collect();
    assert!(waited.contains("timed out") || waited.contains("Timeout"), "{}", r.summary());
    assert!(waited.contains("tests/harness.rs"), "the user's line is named: {}", r.summary());
    assert!(took(&r) < Duration::from_secs(20), "took {:?}: {}", r.elapsed, r.summary());
}

dist_runtime::group!(Rows);
dist_runtime::group!(Cols);
dist_runtime::group!(Inner);

// Wrong on purpose: world rank 3 skips the barrier of the nested group.
#[spmd(unchecked)]
fn nested_group_stall(world: Comm<World>) -> dist_runtime::Result<()> {
    let (_cols, rows) = world.mesh2::<Cols, Rows>(2, 2)?;
    let inner = rows.split::<Inner>(0, rows.rank() as i64)?;
    if world.rank() == 3 {
        std::thread::sleep(Duration::from_secs(6));
        return Ok(());
    }
    inner.barrier()
}

/// A group made from a group is named by its members' world ranks in errors (rows of
/// world ranks 2 and 3 give `Inner{2,3}`, not the parent-local `Inner{0,1}`).
#[test]
fn nested_groups_are_named_by_world_ranks() {
    let r = run_env("nested_group_stall", 4, 60.0, &[("DIST_TIMEOUT", "2")]);
    assert!(!r.success());
    let two = r.ranks.iter().find(|x| x.rank == 2).unwrap();
    assert!(two.output.contains("Inner{2,3}"), "{}", r.summary());
    assert!(!r.summary().contains("Inner{0,1}"), "{}", r.summary());
}

#[spmd]
fn barrier_pause_barrier(world: Comm<World>) -> dist_runtime::Result<()> {
    world.barrier()?;
    std::thread::sleep(Duration::from_secs(2));
    world.barrier()
}

/// Two token-less torchrun-style jobs on one port (rank 0 of the first hosts the store).
/// With a job identity (torchrun's run id, dist's DIST_JOB_ID) the second job's rank
/// stops at init naming both jobs, and the first job runs to the end; without one, one
/// of the two rank-1 processes stops saying two jobs share the address, and every other
/// rank of both ends with an error naming it. Never a merge that ends well.
#[test]
fn two_jobs_on_one_port_do_not_merge() {
    if shm_only("two_jobs_on_one_port_do_not_merge") {
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let start = |port: &str, rank: &str, job: Option<(&str, &str)>| {
        let mut c = std::process::Command::new(&exe);
        c.env("DIST_ENTRY", "harness::barrier_pause_barrier")
            .envs([("RANK", rank), ("WORLD_SIZE", "2"), ("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", port)])
            .envs([("DIST_TIMEOUT", "10"), ("RUST_BACKTRACE", "0")])
            .env_remove("DIST_JOB_TOKEN")
            .env_remove("DIST_JOB_ID")
            .env_remove("TORCHELASTIC_RUN_ID")
            .env_remove("DIST_BACKEND")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        if let Some((var, id)) = job {
            c.env(var, id);
        }
        c.spawn().unwrap()
    };
    let out = |c: std::process::Child| {
        let o = c.wait_with_output().unwrap();
        (o.status.success(), String::from_utf8_lossy(&o.stderr).into_owned())
    };
    let port = || std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port().to_string();
    // With identities (torchrun's variable for one job, dist's for the other).
    let p = port();
    let a0 = start(&p, "0", Some(("TORCHELASTIC_RUN_ID", "job-a")));
    std::thread::sleep(Duration::from_millis(300));
    let b1 = start(&p, "1", Some(("DIST_JOB_ID", "job-b")));
    std::thread::sleep(Duration::from_millis(300));
    let a1 = start(&p, "1", Some(("TORCHELASTIC_RUN_ID", "job-a")));
    let (a0, a1, b1) = (out(a0), out(a1), out(b1));
    assert!(a0.0 && a1.0, "the first job must run to its end: a0 {a0:?} a1 {a1:?}");
    assert!(!b1.0, "the stranger joined: {b1:?}");
    assert!(b1.1.contains(r#"belongs to job "job-a", and this rank (rank 1) is of job "job-b""#), "{b1:?}");
    // Without: the rank claim.
    let p = port();
    let a0 = start(&p, "0", None);
    std::thread::sleep(Duration::from_millis(300));
    let (a1, b1) = (start(&p, "1", None), start(&p, "1", None));
    let (a0, a1, b1) = (out(a0), out(a1), out(b1));
    let said = |o: &(bool, String)| o.1.contains("another process already joined the job") && o.1.contains("rank 1");
    assert!(!(a1.0 && b1.0), "both rank-1 processes joined: {a1:?} {b1:?}");
    assert!(said(&a1) || said(&b1), "neither rank 1 was told: a1 {a1:?}, b1 {b1:?}, a0 {a0:?}");
    // The refused rank says so in the store: the job the other one joined ends too, both
    // its ranks naming the conflict, rather than finishing with a stranger.
    assert!(!a0.0 && !a1.0 && !b1.0, "a rank ended well: a0 {a0:?}, a1 {a1:?}, b1 {b1:?}");
    let joined = if said(&a1) { &b1 } else { &a1 };
    for o in [&a0, joined] {
        assert!(o.1.contains("two jobs share MASTER_ADDR:MASTER_PORT"), "a0 {a0:?}, joined {joined:?}");
    }
    // A second rank 0 on the taken port says so in the first job's store: the first job's
    // rank 0, waiting for a rank 1 that either job's may be, stops naming it.
    let p = port();
    let a0 = start(&p, "0", None);
    std::thread::sleep(Duration::from_millis(300));
    let b0 = start(&p, "0", None);
    let (b0, a0) = (out(b0), out(a0));
    assert!(!b0.0 && b0.1.contains("the port is in use"), "{b0:?}");
    assert!(!a0.0 && a0.1.contains("a second rank 0") && a0.1.contains("found the store's port taken"), "{a0:?}");
}

/// Ranks started by hand (torchrun style, no launcher): one that cannot join (a wrong
/// variable of its own) writes its error to the job's store, and rank 0, waiting for it
/// at the rendezvous, stops naming it and its error, not at its deadline (120 s here).
#[test]
fn a_rank_that_cannot_join_is_named_by_the_rank_waiting_for_it() {
    if shm_only("a_rank_that_cannot_join_is_named_by_the_rank_waiting_for_it") {
        return;
    }
    // A bad tuning variable, and a world size that differs from rank 0's.
    for (var, value) in [("DIST_SLOT_KIB", "8"), ("WORLD_SIZE", "3")] {
        one_rank_cannot_join(var, value);
    }
}

fn one_rank_cannot_join(var: &str, value: &str) {
    let exe = std::env::current_exe().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port().to_string();
    let start = |rank: &str, extra: &[(&str, &str)]| {
        std::process::Command::new(&exe)
            .env("DIST_ENTRY", "harness::barrier_pause_barrier")
            .envs([("RANK", rank), ("WORLD_SIZE", "2"), ("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", &port)])
            .envs([("DIST_TIMEOUT", "120"), ("RUST_BACKTRACE", "0")])
            .envs(extra.iter().copied())
            .env_remove("DIST_JOB_TOKEN")
            .env_remove("DIST_JOB_ID")
            .env_remove("TORCHELASTIC_RUN_ID")
            .env_remove("DIST_BACKEND")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let out = |c: std::process::Child| {
        let o = c.wait_with_output().unwrap();
        (o.status.success(), String::from_utf8_lossy(&o.stderr).into_owned())
    };
    let r0 = start("0", &[]);
    std::thread::sleep(Duration::from_millis(300));
    let r1 = start("1", &[(var, value)]);
    let (r1, r0) = (out(r1), out(r0));
    let named = format!("{var}={value}");
    assert!(!r1.0 && r1.1.contains("[rank 1] error: cannot join the job: environment: "), "{r1:?}");
    assert!(r1.1.contains(&named), "{r1:?}");
    assert!(!r0.0, "rank 0 ran without rank 1: {r0:?}");
    assert!(r0.1.contains("rank 1 could not join the job") && r0.1.contains(&named), "{r0:?}");
    assert!(!r0.1.contains("timed out"), "{r0:?}");
}

/// Ranks started by hand, one of which never starts: at its deadline, rank 0 names the
/// rank that never joined and where it waited for it, not just a store key.
#[test]
fn a_rank_that_never_starts_is_named_at_the_deadline() {
    if shm_only("a_rank_that_never_starts_is_named_at_the_deadline") {
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port().to_string();
    let o = std::process::Command::new(&exe)
        .env("DIST_ENTRY", "harness::barrier_pause_barrier")
        .envs([("RANK", "0"), ("WORLD_SIZE", "3"), ("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", &port)])
        .envs([("DIST_TIMEOUT", "2"), ("RUST_BACKTRACE", "0")])
        .env_remove("DIST_JOB_TOKEN")
        .env_remove("DIST_JOB_ID")
        .env_remove("TORCHELASTIC_RUN_ID")
        .env_remove("DIST_BACKEND")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains(&format!("ranks 1, 2 of 3 never joined the job at 127.0.0.1:{port} within 2s")), "{err}");
}

// Wrong on purpose: rank 1 never receives what rank 0 sends.
#[spmd(unchecked)]
fn unmatched_sends(world: Comm<World>) -> dist_runtime::Result<()> {
    const T: Tag<u32> = Tag::new(3);
    if world.rank() == 0 {
        for i in 0..5u32 {
            world.send(1, T, &[i; 4])?;
        }
    }
    world.barrier()
}

/// Messages a rank never receives are an error when it leaves, naming the sender's
/// line, the tag and the count, not a silent exit 0: on shm and on MPI, where a small send
/// completes as soon as MPI holds it (was: the job ended with exit 0 and the message gone).
#[test]
fn messages_never_received_are_an_error_naming_the_sender() {
    // Eager sends (checks off on shm; MPI's own below 4 KiB): they complete, and the
    // receiver's exit reports them.
    let r = run_env("unmatched_sends", 2, 60.0, &[("DIST_DEBUG", "off")]);
    println!("{}", r.summary());
    assert!(!r.success(), "{}", r.summary());
    let one = &r.ranks[1];
    assert_eq!(one.code, Some(1), "{}", r.summary());
    assert!(
        one.output.contains("rank 0 of World sent 5 messages with tag 3 (80 bytes) at tests/harness.rs:")
            && one.output.contains("that rank 1 never received"),
        "{}",
        r.summary()
    );
    let r = run("unmatched_sends", 2, 60.0);
    if shm_only("messages_never_received_are_an_error_naming_the_sender (rendezvous)") {
        // MPI completes these sends eagerly whatever dist's checks say: the receiver names them.
        assert!(r.summary().contains("that rank 1 never received"), "{}", r.summary());
        return;
    }
    // Rendezvous sends (the default): the first send waits for a receive that never
    // comes while its peer waits in the barrier, as on NCCL; named as a deadlock.
    let all = r.summary();
    assert!(
        all.contains("rank 0 waits in send to rank 1 with tag 3 on World") && all.contains("rank 1 waits in barrier"),
        "{all}"
    );
    assert_eq!(r.first_failure.map(|i| r.ranks[i].rank), Some(0), "{all}");
}

// Rank 0 sends 48 messages of 1 MiB on tag A that rank 1 receives only after the one
// on tag B sent behind them: valid while rank 1 may stash 48 MiB of unexpected messages.
#[spmd(unchecked)]
fn flood_then_other_tag(world: Comm<World>) -> dist_runtime::Result<()> {
    const A: Tag<u8> = Tag::new(8);
    const B: Tag<u8> = Tag::new(9);
    let mib = vec![1u8; 1 << 20];
    if world.rank() == 0 {
        let reqs: Vec<_> = (0..48).map(|_| world.isend(1, A, &mib)).collect::<Result<_, _>>()?;
        world.send(1, B, &[2u8])?; // @flood-send
        for r in reqs {
            r.wait()?;
        }
    } else {
        let mut b = [0u8];
        world.recv(0, B, &mut b)?; // @flood-recv
        let mut got = vec![0u8; 1 << 20];
        for _ in 0..48 {
            world.recv(0, A, &mut got)?;
            assert_eq!(got, mib);
        }
    }
    Ok(())
}

/// Unexpected messages are stashed up to `DIST_STASH_MIB` per communicator; past it the
/// receiver leaves them in the ring and their sender waits, so a flood cannot grow a
/// rank's memory without end. The same program completes under the default bound, and
/// under a bound it exceeds it is the deadlock it then is, named in about a second.
#[test]
fn unexpected_messages_are_bounded_then_senders_wait() {
    if shm_only("unexpected_messages_are_bounded_then_senders_wait") {
        return;
    }
    let r = run("flood_then_other_tag", 2, 60.0);
    assert!(r.success(), "{}", r.summary());
    let r = run_env("flood_then_other_tag", 2, 60.0, &[("DIST_STASH_MIB", "8")]);
    let all = r.summary();
    assert!(
        all.contains(&format!("rank 0 waits in send to rank 1 with tag 9 on World ({})", at("@flood-send"))),
        "{all}"
    );
    assert!(
        all.contains(&format!("rank 1 waits in recv from rank 0 with tag 9 on World ({})", at("@flood-recv"))),
        "{all}"
    );
    assert!(took(&r) < Duration::from_secs(10), "took {:?}: {all}", r.elapsed);
}

/// This process's resident memory, current and peak, in MiB (Linux's /proc).
fn rss_mib() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            .map_or(0, |kb| kb >> 10)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Many isends to a receiver that reads late: rank 0 posts 10 000 × 64 KiB (625 MiB)
/// while rank 1 sleeps, under DIST_ISEND_MIB=16. Each isend copies what the ring cannot
/// take at once; past 16 MiB held for the peer, an isend waits for it to read, so the
/// sender's memory stays bounded (it grew by the whole 625 MiB before), and every
/// message arrives intact and in order.
#[spmd(unchecked)]
fn isend_flood_to_a_late_reader(world: Comm<World>) -> Result<(), String> {
    const T: Tag<u32> = Tag::new(6);
    const K: usize = 10_000;
    const LEN: usize = 16 << 10; // 64 KiB of u32
    if world.rank() == 0 {
        let (before, _) = rss_mib();
        let msgs: Vec<Vec<u32>> = (0..4).map(|i| vec![i as u32; LEN]).collect();
        let mut reqs = Vec::with_capacity(K);
        for k in 0..K {
            reqs.push(world.isend(1, T, &msgs[k % 4]).map_err(|e| e.to_string())?);
        }
        dist_runtime::wait_all(reqs).map_err(|e| e.to_string())?;
        let (after, peak) = rss_mib();
        println!("isend flood: rss {before} MiB before, peak {peak} MiB, {after} MiB after wait_all");
        if peak > before + 64 {
            return Err(format!("the sender grew from {before} to a peak of {peak} MiB for {K} isends of 64 KiB"));
        }
    } else {
        std::thread::sleep(Duration::from_millis(300));
        let mut got = vec![0u32; LEN];
        for k in 0..K {
            world.recv(0, T, &mut got).map_err(|e| e.to_string())?;
            if got[0] != (k % 4) as u32 || got[LEN - 1] != (k % 4) as u32 {
                return Err(format!("message {k} arrived wrong or out of order"));
            }
        }
    }
    Ok(())
}

#[test]
fn isend_copies_are_bounded_then_senders_wait() {
    let r = run_env("isend_flood_to_a_late_reader", 2, 120.0, &[("DIST_ISEND_MIB", "16")]);
    println!("{}", r.ranks[0].output);
    assert!(r.success(), "{}", r.summary());
}

// Rank 2 computes for 3 s before the barrier; the others give it 1 s.
#[spmd(unchecked)]
fn late_to_a_monitored_barrier(world: Comm<World>) -> dist_runtime::Result<()> {
    if world.rank() == 2 {
        std::thread::sleep(Duration::from_secs(3));
        return world.barrier();
    }
    world.monitored_barrier(Duration::from_secs(1))
}

/// torch's `monitored_barrier`: a barrier with its own deadline that names the ranks that
/// did not arrive, long before `DIST_TIMEOUT`; the communicator's deadline is restored.
#[test]
fn a_monitored_barrier_names_the_ranks_that_did_not_arrive() {
    let r = run_env("late_to_a_monitored_barrier", 3, 60.0, &[("DIST_TIMEOUT", "300")]);
    let zero = &r.ranks[0].output;
    println!("{zero}");
    assert!(zero.contains("monitored_barrier at tests/harness.rs:"), "{}", r.summary());
    assert!(
        zero.contains("timed out after 1.0s") && zero.contains("for rank(s) 2 to reach the same call"),
        "{}",
        r.summary()
    );
    assert!(took(&r) < Duration::from_secs(10), "took {:?}: {}", r.elapsed, r.summary());
}

/// The helper the entry below sends through: the error names its line and the caller's.
fn send_sevens(world: &Comm<World>) -> dist_runtime::Result<()> {
    const T: Tag<u8> = Tag::new(4);
    world.send(1, T, &[7u8; 100]) // @send-to-left
}

// Wrong on purpose: rank 1 leaves at once; rank 0 sends to it after it has gone.
#[spmd(unchecked)]
fn send_to_a_rank_that_left(world: Comm<World>) -> dist_runtime::Result<()> {
    if world.rank() == 0 {
        std::thread::sleep(Duration::from_millis(500));
        send_sevens(&world)?; // @send-to-left-call
    }
    Ok(())
}

/// Sends to a rank that already returned from its entry are the sender's error (the
/// receiver looked before they came).
#[test]
fn sends_to_a_rank_that_left_are_an_error() {
    if shm_only("sends_to_a_rank_that_left_are_an_error") {
        return;
    }
    // Eager sends (checks off): the send completes into the ring; rank 0's exit says so.
    let r = run_env("send_to_a_rank_that_left", 2, 60.0, &[("DIST_DEBUG", "off")]);
    println!("{}", r.summary());
    assert!(!r.success(), "{}", r.summary());
    let zero = &r.ranks[0].output;
    assert!(zero.contains("to rank 1, which returned from its entry without receiving them"), "{}", r.summary());
    // Rendezvous sends (the default): the send itself fails, naming the rank that left.
    let r = run("send_to_a_rank_that_left", 2, 60.0);
    let zero = &r.ranks[0].output;
    let want = format!(
        "left World (returned from its entry) while rank 0 still waits on it in send at {}, called from {}",
        at("@send-to-left"),
        at("@send-to-left-call")
    );
    assert!(zero.contains(&want), "{want}: {}", r.summary());
}

// Wrong on purpose: rank 0 panics with a large isend in flight; rank 1 waits for it.
#[spmd(unchecked)]
fn panic_with_isend_in_flight(world: Comm<World>) -> dist_runtime::Result<()> {
    const T: Tag<u8> = Tag::new(6);
    if world.rank() == 0 {
        let big = vec![1u8; 8 << 20];
        let _req = world.isend(1, T, &big)?;
        panic!("panic with an isend in flight, on purpose");
    }
    std::thread::sleep(Duration::from_millis(200));
    let mut got = vec![0u8; 8 << 20];
    world.recv(0, T, &mut got)
}

/// A rank that panics with a large send in flight is reported to its peer like any
/// other death, in well under the deadline.
#[test]
fn a_panic_with_an_isend_in_flight_reaches_the_peer_fast() {
    let r = run_env("panic_with_isend_in_flight", 2, 60.0, &[("DIST_TIMEOUT", "30")]);
    println!("{}", r.summary());
    assert!(!r.success());
    let i = r.first_failure.unwrap();
    assert_eq!(r.ranks[i].rank, 0, "{}", r.summary());
    assert!(took(&r) < Duration::from_secs(10), "took {:?}: {}", r.elapsed, r.summary());
}

/// The line of the mismatched receive, for the test below.
const MISMATCH_LINE: u32 = line!() + 9;

// Wrong on purpose: rank 1 receives 8 elements where rank 0 sent 4.
#[spmd(unchecked)]
fn recv_of_the_wrong_length(world: Comm<World>) -> dist_runtime::Result<()> {
    const T: Tag<u32> = Tag::new(8);
    if world.rank() == 0 {
        world.send(1, T, &[1u32; 4])
    } else {
        world.recv(0, T, &mut [0u32; 8])
    }
}

/// A receive whose buffer does not fit the message names the user's line, not the
/// library's.
#[test]
fn a_mismatched_receive_names_the_users_line() {
    let r = run("recv_of_the_wrong_length", 2, 60.0);
    assert!(!r.success());
    // In the whole report: mpirun can interleave one rank's stderr into another's capture.
    let all = r.summary();
    assert!(all.contains(&format!("recv at tests/harness.rs:{MISMATCH_LINE}")), "{all}");
    assert!(!all.contains("dist-runtime/src"), "{all}");
}

// Wrong on purpose: a member fails instead of joining the creation.
#[spmd(unchecked)]
fn member_fails_during_creation(world: Comm<World>) -> dist_runtime::Result<()> {
    if world.rank() == 2 {
        std::thread::sleep(Duration::from_millis(300));
        panic!("a member fails during creation, on purpose");
    }
    let g = world.subgroup::<Pair>(&[0, 1, 2])?;
    if let Some(g) = g {
        g.barrier()?;
    }
    Ok(())
}

/// A member that fails while a group is created reaches every other member at once,
/// not at the deadline.
#[test]
fn a_failure_during_creation_reaches_every_member_fast() {
    let r = run_env("member_fails_during_creation", 4, 60.0, &[("DIST_TIMEOUT", "30")]);
    println!("{}", r.summary());
    assert!(!r.success());
    let i = r.first_failure.unwrap();
    assert_eq!(r.ranks[i].rank, 2, "{}", r.summary());
    assert!(took(&r) < Duration::from_secs(10), "took {:?}: {}", r.elapsed, r.summary());
}

// Wrong on purpose: the last rank stops itself (SIGSTOP) before the barrier.
#[spmd(unchecked)]
fn a_rank_stops_itself(world: Comm<World>) -> dist_runtime::Result<()> {
    if world.rank() == world.size() - 1 {
        // The launcher's kill ends the stopped process.
        std::process::Command::new("kill").args(["-STOP", &std::process::id().to_string()]).status().unwrap();
    }
    world.barrier()
}

/// A stopped rank (SIGSTOP) is a stall, not a deadlock: the lowest rank waiting on it
/// names it after a second, the waits go on to the deadline, whose error names it, and
/// the launcher names it as the cause (its peers stop as its victims).
#[test]
fn a_stopped_rank_is_named_as_stopped() {
    let r = run_env("a_rank_stops_itself", 3, 30.0, &[("DIST_TIMEOUT", "4")]);
    assert!(!r.success());
    let all = r.summary();
    println!("stopped rank, 3 ranks: ended in {:?}", r.elapsed);
    assert!(all.contains("rank 2's process (pid "), "{all}");
    assert!(all.contains("is stopped (SIGSTOP): a stall, not a deadlock"), "{all}");
    assert!(all.contains("warning: rank 2's process"), "{all}");
    assert!(!all.contains("deadlock detected"), "{all}");
    assert!(all.contains("timed out after 4.0s"), "{all}");
    // The story is the detecting rank's snapshot: rank 0's or rank 1's wait, or both.
    assert!(all.contains("waits in barrier on World"), "{all}");
    assert_eq!(r.first_failure.map(|i| r.ranks[i].rank), Some(2), "{all}");
    assert!(all.contains("rank 2 is the cause, as its peers found"), "{all}");
    assert!(took(&r) < Duration::from_secs(12), "took {:?}: {all}", r.elapsed);
}

// Wrong on purpose: rank 1 posts two large sends to rank 0 and stops itself (SIGSTOP)
// before MPI has moved their payloads. Rank 0 waits for the second receive first, so it
// takes the first message off the wire by matched probe: its start (the header, the
// payload's first fragment) arrived, the rest never comes.
#[spmd(unchecked)]
fn a_sender_stops_mid_message(world: Comm<World>) -> dist_runtime::Result<()> {
    const T: Tag<u8> = Tag::new(5);
    const LEN: usize = 1 << 20;
    if world.rank() == 1 {
        let (a, b) = (vec![1u8; LEN], vec![2u8; LEN]);
        let reqs = vec![world.isend(0, T, &a)?, world.isend(0, T, &b)?];
        // The launcher's kill ends the stopped process.
        std::process::Command::new("kill").args(["-STOP", &std::process::id().to_string()]).status().unwrap();
        dist_runtime::wait_all(reqs)?;
    } else if world.rank() == 0 {
        let (mut a, mut b) = (vec![0u8; LEN], vec![0u8; LEN]);
        let first = world.irecv(1, T, &mut a)?;
        let second = world.irecv(1, T, &mut b)?;
        // The error of the wait that takes the first message off the wire, shown before
        // the first receive's own wait (on its drop) ends the job.
        if let Err(e) = second.wait() {
            println!("[rank 0] second receive: {e}");
        }
        first.wait()?;
    }
    Ok(())
}

/// On MPI, a message whose start arrived and whose rest never comes (its sender stopped
/// mid-rendezvous, or a transport that stopped delivering) ends at the deadline with a
/// timeout naming the pair, and the job ends; it was a wait without end inside
/// `MPI_Mrecv`, or inside the `MPI_Wait` after a cancel MPI does not honour. (Open MPI's
/// single-copy path between processes of one host needs no progress from the sender, so
/// it is off here, as between hosts.)
#[test]
fn a_message_whose_rest_never_comes_ends_at_the_deadline() {
    if !std::env::var("DIST_BACKEND").is_ok_and(|b| b.eq_ignore_ascii_case("mpi")) {
        println!("a_message_whose_rest_never_comes_ends_at_the_deadline: MPI's matched receive; skipped on shm");
        return;
    }
    let r = run_env(
        "a_sender_stops_mid_message",
        2,
        40.0,
        &[("DIST_TIMEOUT", "4"), ("OMPI_MCA_btl_vader_single_copy_mechanism", "none")],
    );
    let all = r.summary();
    println!("a sender stopped mid-message: ended in {:?}", r.elapsed);
    assert!(!r.success());
    assert!(all.contains("timed out after 4.0s"), "{all}");
    assert!(all.contains("the rest of a 1048576-byte message from rank 1 with tag 5"), "{all}");
    // The first receive's wait matched the second message, whose rest never comes either,
    // and MPI cannot cancel it: the rank ends the job rather than hand back a buffer MPI
    // may still write.
    assert!(all.contains("so rank 0 ends the job here"), "{all}");
    assert!(took(&r) < Duration::from_secs(20), "took {:?}: {all}", r.elapsed);
}

// A rank stops itself (SIGSTOP) inside the job, in a loop of collectives and a ring of
// sends, and a child of it resumes it `DIST_TEST_STOP_MS` later: a preempted VM or an
// operator's `kill -STOP`/`kill -CONT`. The job must end as if nothing happened.
#[spmd(unchecked)]
fn a_rank_stops_for_a_while(world: Comm<World>) -> dist_runtime::Result<()> {
    const T: Tag<f64> = Tag::new(2);
    let ms: u64 = std::env::var("DIST_TEST_STOP_MS").ok().and_then(|v| v.parse().ok()).unwrap_or(1500);
    let (n, me) = (world.size(), world.rank());
    for step in 0..40usize {
        if me == 1 && step == 10 {
            let pid = std::process::id().to_string();
            let resume = format!("sleep {}; kill -CONT {pid}", ms as f64 / 1000.0);
            let mut resumer = std::process::Command::new("sh").args(["-c", &resume]).spawn().unwrap();
            std::process::Command::new("kill").args(["-STOP", &pid]).status().unwrap();
            resumer.wait().unwrap();
        }
        let mut v = vec![me as f64; 1000];
        world.all_reduce(&mut v, ReduceOp::Sum)?;
        assert_eq!(v[0], (n * (n - 1) / 2) as f64);
        let mut got = [0.0; 8];
        world.sendrecv((me + 1) % n, T, &[me as f64; 8], (me + n - 1) % n, &mut got)?;
        assert_eq!(got[0], ((me + n - 1) % n) as f64);
        world.barrier()?;
    }
    Ok(())
}

/// A rank stopped for 1.5 s inside the job (SIGSTOP, then SIGCONT) is a stall: no
/// deadlock, no failure; its peers wait and the job ends well (on shm and on MPI).
#[test]
fn a_rank_stopped_for_a_while_is_a_stall_not_a_failure() {
    for n in [2, 4] {
        let r = run_env("a_rank_stops_for_a_while", n, 60.0, &[("DIST_TIMEOUT", "30"), ("DIST_TEST_STOP_MS", "1500")]);
        let all = r.summary();
        println!("a rank stopped for 1.5 s, {n} ranks: ended in {:?}", r.elapsed);
        assert!(r.success(), "{all}");
        assert!(!all.contains("deadlock"), "{all}");
        assert!(r.elapsed >= Duration::from_millis(1500), "{all}");
    }
}

// Wrong on purpose: the last rank returns at once while the others wait in a barrier.
#[spmd(unchecked)]
fn last_rank_returns_early(world: Comm<World>) -> Result<(), String> {
    if world.rank() == world.size() - 1 {
        return Ok(());
    }
    std::thread::sleep(Duration::from_millis(200));
    world.barrier().map_err(|e| e.to_string())
}

/// A rank that returns from its entry while its peers wait on it is the cause the
/// launcher names (it exited 0; its peers stopped because of it), and the peers do not
/// call it failed.
#[test]
fn a_rank_that_returns_early_is_named_as_the_cause() {
    let r = run("last_rank_returns_early", 4, 60.0);
    println!("a rank returns early, 4 ranks: ended in {:?}\n{}", r.elapsed, r.summary());
    assert!(!r.success());
    // On MPI, mpirun's own teardown can hang once every rank has gone (Open MPI 4.1):
    // the launcher stops it 4 s after the last rank's report, never at the timeout.
    assert!(took(&r) < Duration::from_secs(20), "took {:?}: {}", r.elapsed, r.summary());
    let i = r.first_failure.expect("a cause");
    assert_eq!((r.ranks[i].rank, r.ranks[i].code), (3, Some(0)), "{}", r.summary());
    assert!(
        r.summary().contains("rank 3 returned from its entry while its peers still waited on it"),
        "{}",
        r.summary()
    );
    for x in r.ranks.iter().filter(|x| x.rank != 3) {
        assert!(x.code == Some(3) || x.killed_by_launcher, "rank {}: {}", x.rank, r.summary());
        assert!(!x.output.contains("failed: left"), "{}", r.summary());
    }
    assert!(r.summary().contains("rank 3 (of World) left World (returned from its entry)"), "{}", r.summary());
}

#[spmd]
fn barrier_and_return(world: Comm<World>) -> dist_runtime::Result<()> {
    world.barrier()
}

/// The launcher tells a job whose processes never joined it (a plain program: what a
/// binary whose `main` is not `#[spmd]` runs) from one whose ranks did; `cargo spmd run`
/// notes the former instead of reporting a job that ran nothing as a plain success.
#[test]
fn the_report_counts_the_ranks_that_joined() {
    if shm_only("the_report_counts_the_ranks_that_joined") {
        return;
    }
    let r = Launch::new("true", 3).capture(true).timeout(Duration::from_secs(30)).run().unwrap();
    assert!(r.success(), "{}", r.summary());
    assert_eq!(r.ranks_joined(), Some(0));
    let r = run("barrier_and_return", 3, 60.0);
    assert!(r.success(), "{}", r.summary());
    assert_eq!(r.ranks_joined(), Some(3));
}

// Wrong on purpose where an isend waits for its receiver (MPI past its eager size):
// rank 0 drops an isend's request while rank 1 sends to it first.
#[spmd(unchecked)]
fn dropped_isend_while_the_peer_sends(world: Comm<World>) -> dist_runtime::Result<()> {
    const T: Tag<f32> = Tag::new(9);
    let n = 16384;
    let x = vec![1.0 + world.rank() as f32; n];
    let mut y = vec![0f32; n];
    if world.rank() == 0 {
        let _ = world.isend(1, T, &x)?; // @dropped-isend
        world.recv(1, T, &mut y)?;
    } else {
        world.send(0, T, &x)?;
        world.recv(0, T, &mut y)?;
    }
    let want = 2.0 - world.rank() as f32;
    if let Some(i) = y.iter().position(|&v| v != want) {
        return Err(dist_runtime::Error::Env(format!("rank {} received {} at {i}", world.rank(), y[i])));
    }
    Ok(())
}

/// A request dropped without a wait never lets a peer read freed memory, and an op
/// that failed is not swallowed by the drop: the job either delivers every byte right
/// (shm: the isend's copy is out at once) or fails naming the isend's line (MPI: its
/// drop waits for a receiver that sends first, a deadlock under rendezvous semantics).
#[test]
fn a_dropped_request_never_delivers_wrong_data() {
    let r = run("dropped_isend_while_the_peer_sends", 2, 60.0);
    let all = r.summary();
    println!("{all}");
    assert!(!all.contains(" received "), "{all}");
    if !r.success() {
        let want = format!("the request posted at {} was dropped without a wait", at("@dropped-isend"));
        assert!(all.contains(&want), "{want}: {all}");
    }
}

// Wrong on purpose: rank 1 fails at once; rank 0's barrier reports it while rank 0 has a
// receive from rank 1 pending, which the error's `?` drops.
#[spmd(unchecked)]
fn an_error_leaves_with_a_request_pending(world: Comm<World>) -> dist_runtime::Result<()> {
    const T: Tag<u32> = Tag::new(11);
    if world.rank() == 1 {
        return Err(dist_runtime::Error::Env("rank 1 fails on purpose".into()));
    }
    let mut a = [0u32];
    let _pending = world.irecv(1, T, &mut a)?;
    world.barrier()?;
    Ok(())
}

// Wrong on purpose (round 6 of the blind corpus): each rank posts a receive from each
// neighbour in a loop, and the next post names a rank out of range; `?` returns that
// error, dropping the receive already posted, which its peer never serves.
#[spmd(unchecked)]
fn a_refused_post_leaves_earlier_posts_pending(world: Comm<World>) -> dist_runtime::Result<()> {
    const T: Tag<u32> = Tag::new(12);
    let (me, n) = (world.rank(), world.size());
    let mut bufs = [[0u32]; 2];
    let mut reqs = Vec::new();
    for (k, b) in bufs.iter_mut().enumerate() {
        let peer = if k == 0 { (me + 1) % n } else { n + me };
        reqs.push(world.irecv(peer, T, b)?); // @refused-post
    }
    dist_runtime::wait_all(reqs)?;
    Ok(())
}

/// An argument error leaving a loop of posts by `?` drops the requests posted before it
/// without turning the error into a panic: every rank reports the error naming its line.
#[test]
fn a_refused_post_keeps_its_error_when_earlier_requests_drop() {
    let r = run("a_refused_post_leaves_earlier_posts_pending", 2, 60.0);
    let all = r.summary();
    assert!(!r.success(), "{all}");
    assert!(!all.contains("dropped without a wait"), "{all}");
    assert!(!all.contains("panicked"), "{all}");
    assert!(all.contains(&at("@refused-post")) && all.contains("out of range"), "{all}");
}

/// A request dropped as an op's error leaves the function does not turn that error into
/// a panic: the rank reports the error it got, as a victim of the rank that failed.
#[test]
fn a_request_dropped_by_an_errors_return_keeps_the_error() {
    let r = run("an_error_leaves_with_a_request_pending", 2, 60.0);
    let all = r.summary();
    assert!(!r.success(), "{all}");
    assert_eq!(r.first_failure.map(|i| r.ranks[i].rank), Some(1), "{all}");
    let zero = &r.ranks[0];
    assert!(!zero.output.contains("dropped without a wait"), "{all}");
    assert!(zero.code == Some(3) || zero.killed_by_launcher, "{all}");
}

// Wrong on purpose: rank 1 receives only after rank 0's send has timed out, and rank 0
// ignores the error and overwrites the buffer it sent from.
#[spmd(unchecked)]
fn send_buffer_reused_after_its_timeout(world: Comm<World>) -> dist_runtime::Result<()> {
    const T: Tag<f64> = Tag::new(5);
    let n = 1 << 16; // 512 KiB: past every eager limit, so MPI sends from the buffer itself
    if world.rank() == 0 {
        let mut buf = vec![1.0f64; n];
        let sent = world.send(1, T, &buf);
        println!("rank 0's send returned {}", if sent.is_ok() { "Ok" } else { "an error" });
        buf.fill(9.0);
        std::thread::sleep(Duration::from_secs(5));
        drop(buf);
    } else if world.rank() == 1 {
        std::thread::sleep(Duration::from_secs(3));
        let mut got = vec![0.0f64; n];
        match world.recv(0, T, &mut got) {
            Ok(()) if got.iter().any(|&x| x != 1.0) => {
                println!("CORRUPT: rank 1 received what rank 0 wrote after its send had failed")
            }
            Ok(()) => println!("rank 1 received the data as sent"),
            Err(e) => println!("rank 1's receive failed: {e}"),
        }
    }
    Ok(())
}

/// A send that failed (here its deadline) never lets a receive that comes later read what
/// the caller wrote into the buffer since: shm withdraws the offer (a later receiver gets
/// the data from a copy); on MPI, which cancels no send, the rank ends the job instead of
/// returning while MPI still holds the buffer (`backend/mpi/mod.rs` `release`).
#[test]
fn a_failed_send_never_lends_its_buffer_to_a_later_receive() {
    let r = run_env("send_buffer_reused_after_its_timeout", 2, 60.0, &[("DIST_TIMEOUT", "1")]);
    let all = format!("{}\n--- rank 1's output ---\n{}", r.summary(), r.ranks[1].output);
    println!("{all}");
    assert!(!all.contains("CORRUPT"), "{all}");
    assert!(took(&r) < Duration::from_secs(30), "took {:?}: {all}", r.elapsed);
    if std::env::var("DIST_BACKEND").is_ok_and(|b| b.eq_ignore_ascii_case("mpi")) {
        assert!(!r.success(), "{all}");
        assert!(r.ranks[0].output.contains("MPI still holds the send buffer"), "{all}");
        assert!(!r.ranks[0].output.contains("rank 0's send returned"), "{all}");
    }
}

// Wrong on purpose: rank 0 waits for a message from any rank while every other rank
// waits in a barrier for rank 0.
#[spmd(unchecked)]
fn recv_any_while_everyone_waits(world: Comm<World>) -> dist_runtime::Result<()> {
    const T: Tag<u8> = Tag::new(6);
    if world.rank() == 0 {
        let mut b = [0u8; 1];
        world.recv_any(T, &mut b)?; // @recv-any
    }
    world.barrier()
}

// Right: rank 0 waits for any rank while rank 2 waits in the barrier and rank 1 is still
// computing before it sends.
#[spmd(unchecked)]
fn recv_any_with_a_late_sender(world: Comm<World>) -> dist_runtime::Result<()> {
    const T: Tag<u8> = Tag::new(6);
    match world.rank() {
        0 => {
            let mut b = [0u8; 1];
            world.recv_any(T, &mut b)?;
        }
        1 => {
            std::thread::sleep(Duration::from_millis(1500));
            world.send(0, T, &[1])?;
        }
        _ => {}
    }
    world.barrier()
}

/// A receive from any source is a wait on any one of the other ranks: a deadlock named
/// within a second once every one of them is stuck (was: "rank 0 is not blocked", and the
/// deadline), never while one of them is still computing.
#[test]
fn a_receive_from_any_source_no_rank_will_answer_is_a_deadlock() {
    let r = run_env("recv_any_while_everyone_waits", 3, 60.0, &[("DIST_TIMEOUT", "60")]);
    let all = r.summary();
    println!("{all}");
    assert!(!r.success(), "{all}");
    assert!(all.contains("deadlock detected in recv_any"), "{all}");
    assert!(all.contains("rank 0 waits in recv_any from any rank"), "{all}");
    assert!(took(&r) < Duration::from_secs(20), "took {:?}: {all}", r.elapsed);
    let r = run_env("recv_any_with_a_late_sender", 3, 60.0, &[("DIST_TIMEOUT", "60")]);
    assert!(r.success(), "{}", r.summary());
}
