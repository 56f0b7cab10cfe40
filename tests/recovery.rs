//! Surviving a rank's death (shm): `failed_ranks`, `revoke`, `agree` and `shrink`
//! against what each must give, with real rank processes killed or aborting mid-job
//! under a fault-tolerant launch (`Launch::fault_tolerant`), at world sizes 1–8.
// Entries here kill ranks on purpose: the compile-time check proves the run where no
// rank dies, so those that lose a rank turn it off.
#![allow(deprecated)]

use dist_runtime::prelude::*;
use dist_runtime::{Error, Launch};
use std::time::Duration;

dist_runtime::group!(Half);

/// Launches `recovery::entry` on n ranks, fault tolerant, output captured.
fn run(entry: &str, n: usize, f: impl FnOnce(Launch) -> Launch) -> dist_runtime::Report {
    let l = Launch::entry(&format!("recovery::{entry}"), n)
        .unwrap()
        .capture(true)
        .fault_tolerant(true)
        .env("RUST_BACKTRACE", "0")
        .timeout(Duration::from_secs(60));
    f(l).run().unwrap()
}

/// The lines of rank `r`'s output that start with `tag`.
fn said<'a>(r: &'a dist_runtime::launch::RankExit, tag: &str) -> Vec<&'a str> {
    r.output.lines().filter_map(|l| l.split_once(tag).map(|(_, rest)| rest.trim())).collect()
}

/// Without a failure: agreements are the AND of the flags, nobody is counted out, and a
/// shrink is a communicator of every rank, usable for every op and for splits.
#[dist_runtime::test(ranks = [1, 2, 3, 4, 8], timeout = 60)]
fn without_a_failure_agree_is_an_and_and_shrink_keeps_everyone(world: Comm<World>) {
    let (r, n) = (world.rank(), world.size());
    assert!(world.failed_ranks().unwrap().is_empty());
    for round in 0..4 {
        let no = (round + 1) % n;
        assert_eq!(world.agree(r != no).unwrap(), (false, vec![]), "round {round}");
        assert_eq!(world.agree(true).unwrap(), (true, vec![]), "round {round}");
    }
    let live = world.shrink().unwrap();
    assert_eq!((live.rank(), live.size()), (r, n));
    assert_eq!(live.members(), world.members());
    let mut x = [r as u64 + 1];
    live.all_reduce(&mut x, ReduceOp::Sum).unwrap();
    assert_eq!(x[0] as usize, n * (n + 1) / 2);
    let half = live.split::<Half>((r % 2) as u32, r as i64).unwrap();
    let mut y = [1u32];
    half.all_reduce(&mut y, ReduceOp::Sum).unwrap();
    assert_eq!(y[0] as usize, (0..n).filter(|q| q % 2 == r % 2).count());
    // The communicator shrunk stays revoked: its next op fails at once, naming it.
    match world.barrier() {
        Err(Error::Revoked { comm, .. }) => assert_eq!(comm, "World"),
        other => panic!("barrier on a shrunk communicator: {other:?}"),
    }
}

// Rank 0 never sends what the others wait for: it revokes instead.
#[spmd(unchecked)]
fn revoke_reaches_blocked_ranks(world: Comm<World>) -> dist_runtime::Result<()> {
    const T: Tag<u8> = Tag::new(4);
    let (r, n) = (world.rank(), world.size());
    if r == 0 {
        std::thread::sleep(Duration::from_millis(200));
        world.revoke()?;
        match world.barrier() {
            Err(Error::Revoked { by: 0, .. }) => {}
            other => panic!("rank 0's op after its revoke: {other:?}"),
        }
    } else {
        match world.recv(0, T, &mut [0u8; 1]) {
            Err(Error::Revoked { by: 0, op, .. }) => assert_eq!(op, "recv"),
            other => panic!("rank {r}'s receive on a revoked communicator: {other:?}"),
        }
    }
    let live = world.shrink()?;
    assert_eq!(live.size(), n);
    let mut x = [1u16];
    live.all_reduce(&mut x, ReduceOp::Sum)?;
    assert_eq!(x[0] as usize, n);
    println!("recovered: {}", live.size());
    Ok(())
}

#[test]
fn a_revoke_reaches_ranks_blocked_in_other_ops() {
    for n in [2, 3, 4] {
        let r = run("revoke_reaches_blocked_ranks", n, |l| l);
        assert!(r.success(), "n = {n}: {}", r.summary());
        assert!(r.lost.is_empty());
        assert!(r.ranks.iter().all(|x| said(x, "recovered:") == [n.to_string()]), "{}", r.summary());
    }
}

/// The ranks listed in `DIST_TEST_VICTIMS` abort after the first barrier; the others
/// find them failed, shrink, and compute on the communicator of the live ranks.
#[spmd(unchecked)]
fn survivors_shrink_and_go_on(world: Comm<World>) -> dist_runtime::Result<()> {
    let victims: Vec<usize> =
        std::env::var("DIST_TEST_VICTIMS").unwrap().split(',').map(|v| v.parse().unwrap()).collect();
    let (r, n) = (world.rank(), world.size());
    world.barrier()?;
    if victims.contains(&r) {
        std::process::abort();
    }
    let mut x = [1u64];
    match world.all_reduce(&mut x, ReduceOp::Sum) {
        Err(Error::PeerFailed { .. } | Error::Revoked { .. }) => {}
        other => panic!("an all-reduce with dead ranks: {other:?}"),
    }
    // Every victim is seen gone once one is (each died right after the barrier).
    let t = std::time::Instant::now();
    while world.failed_ranks()? != victims && t.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(world.failed_ranks()?, victims);
    let live = world.shrink()?;
    let alive: Vec<usize> = (0..n).filter(|q| !victims.contains(q)).collect();
    assert_eq!(live.size(), alive.len());
    assert_eq!(live.members(), &alive[..]);
    assert_eq!(live.rank(), alive.iter().position(|&q| q == r).unwrap());
    assert!(live.failed_ranks()?.is_empty());
    // Every op family on the new communicator, against serial references.
    let mut sum = [r as u64];
    live.all_reduce(&mut sum, ReduceOp::Sum)?;
    assert_eq!(sum[0], alive.iter().map(|&q| q as u64).sum::<u64>());
    let mut all = vec![0u32; alive.len()];
    live.all_gather(&[r as u32], &mut all)?;
    assert_eq!(all, alive.iter().map(|&q| q as u32).collect::<Vec<_>>());
    let mut b = [if live.rank() == 0 { 42u8 } else { 0 }];
    live.broadcast(&mut b, 0)?;
    assert_eq!(b[0], 42);
    const RING: Tag<u64> = Tag::new(2);
    let (k, m) = (live.rank(), live.size());
    let mut got = [0u64];
    live.sendrecv((k + 1) % m, RING, &[r as u64], (k + m - 1) % m, &mut got)?;
    assert_eq!(got[0] as usize, alive[(k + m - 1) % m]);
    assert_eq!(live.agree(true)?, (true, vec![]));
    let half = live.split::<Half>((k % 2) as u32, k as i64)?;
    half.barrier()?;
    println!("live: {:?}", live.members());
    Ok(())
}

#[test]
fn survivors_of_one_or_two_deaths_shrink_and_compute() {
    for (n, victims) in [(2, "1"), (3, "0"), (4, "3"), (4, "1,2"), (8, "0,5")] {
        let r = run("survivors_shrink_and_go_on", n, |l| l.env("DIST_TEST_VICTIMS", victims));
        let dead: Vec<usize> = victims.split(',').map(|v| v.parse().unwrap()).collect();
        assert!(r.success(), "n = {n}, victims {victims}: {}", r.summary());
        assert_eq!(r.lost, dead, "{}", r.summary());
        let alive: Vec<usize> = (0..n).filter(|q| !dead.contains(q)).collect();
        for q in &alive {
            assert_eq!(said(&r.ranks[*q], "live:"), [format!("{alive:?}")], "{}", r.summary());
        }
    }
}

/// A rank posts its flag to an agreement and dies at once: every survivor gets the
/// same answer (with that rank's flag counted, or that rank counted out).
#[spmd(unchecked)]
fn a_death_during_an_agreement(world: Comm<World>) -> dist_runtime::Result<()> {
    let (r, n) = (world.rank(), world.size());
    world.barrier()?;
    if r == n - 1 {
        let _ = world.agree(false);
        std::process::abort();
    }
    let got = world.agree(true)?;
    assert!(got == (false, vec![]) || got == (true, vec![n - 1]), "{got:?}");
    println!("agreed: {got:?}");
    Ok(())
}

#[test]
fn survivors_agree_alike_when_a_rank_dies_in_the_agreement() {
    for n in [2, 3, 5] {
        let r = run("a_death_during_an_agreement", n, |l| l);
        assert!(r.success(), "n = {n}: {}", r.summary());
        let answers: Vec<Vec<&str>> = r.ranks[..n - 1].iter().map(|x| said(x, "agreed:")).collect();
        assert!(answers.iter().all(|a| a.len() == 1 && *a == answers[0]), "{answers:?}");
    }
}

/// Steps of a sum every rank contributes to; a rank killed from outside at a random
/// time: the survivors shrink, agree on the last step all of them finished, and end with
/// what the steps give on the ranks left.
#[spmd(unchecked)]
fn steps_survive_a_kill(world: Comm<World>) -> dist_runtime::Result<()> {
    const STEPS: u64 = 250;
    let mut comm = world;
    let (mut total, mut before, mut done) = (0u64, 0u64, 0u64);
    while done < STEPS {
        std::thread::sleep(Duration::from_millis(2));
        let mut x = [done + 1];
        match comm.all_reduce(&mut x, ReduceOp::Max) {
            Ok(()) => {
                assert_eq!(x[0], done + 1);
                before = total;
                total += x[0];
                done += 1;
            }
            Err(Error::PeerFailed { .. } | Error::Revoked { .. }) => {
                comm = comm.shrink()?;
                let mut agreed = [done];
                comm.all_reduce(&mut agreed, ReduceOp::Min)?;
                if agreed[0] < done {
                    total = before;
                    done = agreed[0];
                }
            }
            Err(e) => return Err(e),
        }
    }
    assert_eq!(total, STEPS * (STEPS + 1) / 2);
    println!("finished on {}", comm.size());
    Ok(())
}

#[test]
fn a_job_rides_out_kills_at_random_times() {
    let mut seed = std::process::id() as u64;
    for run_no in 0..6 {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let n = [3, 4, 8][run_no % 3];
        let victim = (seed >> 33) as usize % n;
        let at = Duration::from_millis(150 + (seed >> 40) % 500);
        let r = run("steps_survive_a_kill", n, |l| l.kill_after(victim, at));
        if !r.success() && r.lost.is_empty() {
            // Killed before every rank had made its world (a slow start on a loaded
            // machine): nobody can go on, and the job ends at once naming it.
            assert_eq!(r.first_failure.map(|i| r.ranks[i].rank), Some(victim), "{}", r.summary());
            assert!(r.elapsed < Duration::from_secs(20), "{}", r.summary());
            continue;
        }
        assert!(r.success(), "n = {n}, rank {victim} killed at {at:?}: {}", r.summary());
        // The kill may land after the job ended (a slow start): then nobody was lost.
        assert!(r.lost.is_empty() || r.lost == [victim], "{:?}", r.lost);
        eprintln!("n = {n}, rank {victim} killed at {at:?}: lost {:?}, {:.2} s", r.lost, r.elapsed.as_secs_f64());
        // A survivor finishes on the live ranks, or on all of them where the kill came
        // after its last op (the victim had finished its steps too).
        let sizes = if r.lost.is_empty() { vec![n.to_string()] } else { vec![(n - 1).to_string(), n.to_string()] };
        for x in r.ranks.iter().filter(|x| x.rank != victim) {
            let got = said(x, "finished on");
            assert!(got.len() == 1 && sizes.iter().any(|s| s == got[0]), "{got:?}: {}", r.summary());
        }
    }
}

/// A fault-tolerant job still fails when a rank fails by itself (an error, not a
/// signal), and when survivors do not handle the death; both name the cause.
#[spmd(unchecked)]
fn unhandled_death(world: Comm<World>) -> dist_runtime::Result<()> {
    world.barrier()?;
    if world.rank() == 1 {
        std::process::abort();
    }
    world.barrier()
}

#[spmd(unchecked)]
fn an_error_is_not_survived(world: Comm<World>) -> dist_runtime::Result<()> {
    if world.rank() == 1 {
        return Err(Error::Env("on purpose".into()));
    }
    world.barrier()
}

#[test]
fn a_fault_tolerant_job_still_fails_where_nobody_recovers() {
    let r = run("unhandled_death", 3, |l| l);
    assert!(!r.success());
    assert_eq!(r.first_failure, Some(1), "{}", r.summary());
    assert_eq!(r.lost, [1]);
    let r = run("an_error_is_not_survived", 3, |l| l);
    assert!(!r.success());
    assert_eq!(r.first_failure, Some(1), "{}", r.summary());
    assert!(r.lost.is_empty());
}

/// A job that checkpoints every step; on the first attempt rank 1 aborts at step 7. The
/// launcher starts it again (`max_restarts`), and every rank resumes from the last step
/// all of them saved, with the sums a run without failure gives.
#[spmd(unchecked)]
fn restarts_resume_from_the_checkpoint(world: Comm<World>) -> dist_runtime::Result<()> {
    use dist_runtime::checkpoint::Checkpoint;
    let (r, n) = (world.rank(), world.size());
    let ck = Checkpoint::new(std::env::var("DIST_TEST_CKPT").unwrap(), r, n)?;
    let (mut step, mut acc) = match ck.load::<u64>()? {
        Some((s, acc)) => (s + 1, acc),
        None => (0, 0),
    };
    let attempt = dist_runtime::launch::restart_count();
    println!("attempt {attempt} starts at step {step}");
    while step < 20 {
        if attempt == 0 && r == 1 && step == 7 {
            std::process::abort();
        }
        let mut x = [step + r as u64];
        world.all_reduce(&mut x, ReduceOp::Sum)?;
        acc += x[0];
        ck.save(step, &acc)?;
        step += 1;
    }
    let want: u64 = (0..20u64).map(|s| n as u64 * s + (n * (n - 1) / 2) as u64).sum();
    assert_eq!(acc, want);
    println!("done: {acc}");
    Ok(())
}

#[test]
fn a_restarted_job_resumes_from_its_last_checkpoint() {
    for n in [2, 4] {
        let dir = std::env::temp_dir().join(format!("dist-restart-test-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let r = Launch::entry("recovery::restarts_resume_from_the_checkpoint", n)
            .unwrap()
            .capture(true)
            .env("RUST_BACKTRACE", "0")
            .env("DIST_TEST_CKPT", &dir)
            .timeout(Duration::from_secs(60))
            .max_restarts(2)
            .run()
            .unwrap();
        assert!(r.success(), "n = {n}: {}", r.summary());
        assert_eq!(r.restarts, 1, "{}", r.summary());
        for x in &r.ranks {
            // Step 6 was the last every rank saved before rank 1 died at step 7.
            assert_eq!(said(x, "attempt 1 starts at step"), ["7"], "{}", x.output);
            assert_eq!(said(x, "done:").len(), 1, "{}", x.output);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    // No restart allowed: the failure is the job's.
    let dir = std::env::temp_dir().join(format!("dist-restart-test-{}-none", std::process::id()));
    let r = Launch::entry("recovery::restarts_resume_from_the_checkpoint", 2)
        .unwrap()
        .capture(true)
        .env("DIST_TEST_CKPT", &dir)
        .timeout(Duration::from_secs(60))
        .run()
        .unwrap();
    assert!(!r.success() && r.restarts == 0);
    assert_eq!(r.first_failure, Some(1), "{}", r.summary());
    let _ = std::fs::remove_dir_all(&dir);
}

/// The last rank dies as its entry starts, when the others may still be finishing
/// `init`: the job is formed a moment later, and the survivors' recovery is the job's
/// result (a blind trial saw this judged a failure in 5 of 45 runs).
#[spmd(unchecked)]
fn a_death_as_the_entry_starts(world: Comm<World>) -> dist_runtime::Result<()> {
    let (r, n) = (world.rank(), world.size());
    if r == n - 1 {
        std::process::abort();
    }
    let mut x = [1u32];
    let live = match world.all_reduce(&mut x, ReduceOp::Sum) {
        Ok(()) => panic!("an all-reduce with a dead rank completed"),
        Err(_) => world.shrink()?,
    };
    let mut y = [1u32];
    live.all_reduce(&mut y, ReduceOp::Sum)?;
    assert_eq!(y[0] as usize, n - 1);
    println!("survived: {}", live.size());
    Ok(())
}

#[test]
fn a_death_as_the_entry_starts_is_survived() {
    for (k, n) in [3, 3, 3, 3, 3, 4, 4, 4, 2, 2].into_iter().enumerate() {
        let r = run("a_death_as_the_entry_starts", n, |l| l);
        assert!(r.success(), "run {k}, n = {n}: {}", r.summary());
        assert_eq!(r.lost, [n - 1]);
    }
}

/// After a death, rank 0 calls `agree` where the others call `shrink`: a mismatch named
/// on both sides, not an agreement paired with a shrink.
#[spmd(unchecked)]
fn agree_against_shrink(world: Comm<World>) -> dist_runtime::Result<()> {
    let (r, n) = (world.rank(), world.size());
    world.barrier()?;
    if r == n - 1 {
        std::process::abort();
    }
    let mut x = [1u32];
    assert!(world.all_reduce(&mut x, ReduceOp::Sum).is_err());
    let e = if r == 0 { world.agree(true).map(|_| ()) } else { world.shrink().map(|_| ()) };
    match e {
        Err(Error::Mismatch { msg, .. }) => {
            assert!(msg.contains("agree") && msg.contains("shrink"), "{msg}");
            println!("mismatch named");
        }
        other => panic!("rank {r}: agree against shrink gave {other:?}"),
    }
    Ok(())
}

#[test]
fn an_agreement_against_a_shrink_is_a_mismatch() {
    // (Two survivors at least: a lone survivor's agreement is its own.)
    for n in [3, 4] {
        let r = run("agree_against_shrink", n, |l| l.env("DIST_TIMEOUT", "20"));
        assert!(r.success(), "n = {n}: {}", r.summary());
        assert!(r.elapsed < Duration::from_secs(15), "{:?}", r.elapsed);
        for x in &r.ranks[..n - 1] {
            assert_eq!(said(x, "mismatch named").len(), 1, "{}", x.output);
        }
    }
}
