//! Every collective × every dtype × world sizes 1, 2, 3, 4, 8, against a serial
//! reference computed here from data every rank can regenerate.
// Entries here exercise the run-time checks: what the compile-time check cannot follow
// in them is expected (its warnings are `deprecated` uses; docs/static-checks.md).
#![allow(deprecated)]

use dist_runtime::prelude::*;
use dist_tests::*;

fn all_reduce_case<T: Num>(world: &Comm<World>, r: &mut proptest::test_runner::TestRunner) {
    let n = world.size();
    for (k, len) in lengths::<T>(r, 3).into_iter().enumerate() {
        // (One set of inputs for every op: generating each rank's data is most of the
        // test's cost, n times over on every rank.)
        let inputs: Vec<Vec<T>> = (0..n).map(|q| data(q, len, k as u64 * 31)).collect();
        for op in ops::<T>() {
            let mut buf = inputs[world.rank()].clone();
            world.all_reduce(&mut buf, op).unwrap();
            let what = format!("all_reduce {op:?} {} len {len} n {n}", T::DTYPE);
            assert_reduced(&what, &buf, &reduce_ref(&inputs, op), op, n);
        }
    }
}

#[dist_runtime::test(ranks = [1, 2, 3, 4, 8], timeout = 120)]
fn all_reduce_every_dtype_and_op(world: Comm<World>) {
    let mut r = runner();
    for_all_dtypes!(all_reduce_case(&world, &mut r));
}

fn reduce_case<T: Num>(world: &Comm<World>, r: &mut proptest::test_runner::TestRunner) {
    let n = world.size();
    for (k, len) in lengths::<T>(r, 2).into_iter().enumerate() {
        let op = ops::<T>()[draw(r, 0..ops::<T>().len())];
        let root = draw(r, 0..n);
        let inputs: Vec<Vec<T>> = (0..n).map(|q| data(q, len, k as u64)).collect();
        let mut buf = inputs[world.rank()].clone();
        world.reduce(&mut buf, op, root).unwrap();
        let want = if world.rank() == root { reduce_ref(&inputs, op) } else { inputs[world.rank()].clone() };
        assert_reduced(&format!("reduce {op:?} root {root} {} len {len}", T::DTYPE), &buf, &want, op, n);
    }
}

#[dist_runtime::test(ranks = [1, 2, 3, 4, 8], timeout = 120)]
fn reduce_to_random_roots(world: Comm<World>) {
    let mut r = runner();
    for_all_dtypes!(reduce_case(&world, &mut r));
}

fn broadcast_case<T: Num>(world: &Comm<World>, r: &mut proptest::test_runner::TestRunner) {
    let n = world.size();
    for (k, len) in lengths::<T>(r, 2).into_iter().enumerate() {
        let root = draw(r, 0..n);
        let mut buf = data::<T>(world.rank(), len, k as u64);
        world.broadcast(&mut buf, root).unwrap();
        assert_same(&format!("broadcast root {root} {} len {len}", T::DTYPE), &buf, &data::<T>(root, len, k as u64));
    }
}

#[dist_runtime::test(ranks = [1, 2, 3, 4, 8], timeout = 120)]
fn broadcast_from_random_roots(world: Comm<World>) {
    let mut r = runner();
    for_all_dtypes!(broadcast_case(&world, &mut r));
}

fn gather_family<T: Num>(world: &Comm<World>, r: &mut proptest::test_runner::TestRunner) {
    let (n, me) = (world.size(), world.rank());
    for (k, len) in lengths::<T>(r, 2).into_iter().enumerate() {
        let salt = k as u64;
        let want: Vec<T> = (0..n).flat_map(|q| data::<T>(q, len, salt)).collect();
        let mine = data::<T>(me, len, salt);
        // all_gather
        let mut out = vec![T::gen(99, 0, 0); n * len];
        world.all_gather(&mine, &mut out).unwrap();
        assert_same(&format!("all_gather {} len {len}", T::DTYPE), &out, &want);
        // gather
        let root = draw(r, 0..n);
        if me == root {
            let mut out = vec![T::gen(99, 0, 0); n * len];
            world.gather(&mine, Some(&mut out), root).unwrap();
            assert_same(&format!("gather root {root} {} len {len}", T::DTYPE), &out, &want);
        } else {
            world.gather(&mine, None, root).unwrap();
        }
        // scatter: root's buffer split into n blocks of len
        let root = draw(r, 0..n);
        let mut out = vec![T::gen(99, 0, 0); len];
        if me == root {
            world.scatter(Some(&want[..]), &mut out, root).unwrap();
        } else {
            world.scatter(None, &mut out, root).unwrap();
        }
        assert_same(&format!("scatter root {root} {} len {len}", T::DTYPE), &out, &data::<T>(me, len, salt));
        // variable counts: rank q contributes counts[q] (some zero)
        let counts: Vec<usize> = (0..n).map(|q| if q % 3 == 1 { 0 } else { (len + q * 13) % 4099 }).collect();
        let inputs: Vec<Vec<T>> = (0..n).map(|q| data::<T>(q, counts[q], salt + 1)).collect();
        let wantv: Vec<T> = inputs.concat();
        let mut out = vec![T::gen(99, 0, 0); wantv.len()];
        world.all_gather_v(&inputs[me], &mut out, &counts).unwrap();
        assert_same(&format!("all_gather_v {} counts {counts:?}", T::DTYPE), &out, &wantv);
        let root = draw(r, 0..n);
        if me == root {
            let mut out = vec![T::gen(99, 0, 0); wantv.len()];
            world.gather_v(&inputs[me], Some(&mut out), &counts, root).unwrap();
            assert_same(&format!("gather_v {} counts {counts:?}", T::DTYPE), &out, &wantv);
        } else {
            world.gather_v(&inputs[me], None, &counts, root).unwrap();
        }
    }
}

#[dist_runtime::test(ranks = [1, 2, 3, 4, 8], timeout = 120)]
fn gather_scatter_and_variable_counts(world: Comm<World>) {
    let mut r = runner();
    for_all_dtypes!(gather_family(&world, &mut r));
}

fn reduce_scatter_case<T: Num>(world: &Comm<World>, r: &mut proptest::test_runner::TestRunner) {
    let (n, me) = (world.size(), world.rank());
    for (k, len) in lengths::<T>(r, 2).into_iter().enumerate() {
        let block = len / n.max(1) + (k % 3); // per-rank block; total need not divide anything
        let inputs: Vec<Vec<T>> = (0..n).map(|q| data(q, n * block, k as u64 * 7)).collect();
        for op in ops::<T>() {
            let full = reduce_ref(&inputs, op);
            let mut out = vec![T::gen(99, 0, 0); block];
            world.reduce_scatter(&inputs[me], &mut out, op).unwrap();
            assert_reduced(
                &format!("reduce_scatter {op:?} {} block {block}", T::DTYPE),
                &out,
                &full[me * block..(me + 1) * block],
                op,
                n,
            );
        }
    }
}

#[dist_runtime::test(ranks = [1, 2, 3, 4, 8], timeout = 120)]
fn reduce_scatter_every_dtype_and_op(world: Comm<World>) {
    let mut r = runner();
    for_all_dtypes!(reduce_scatter_case(&world, &mut r));
}

fn all_to_all_case<T: Num>(world: &Comm<World>, r: &mut proptest::test_runner::TestRunner) {
    let (n, me) = (world.size(), world.rank());
    for (k, len) in lengths::<T>(r, 2).into_iter().enumerate() {
        let block = len / n;
        let salt = k as u64;
        // rank q's send buffer is data(q, n*block); block j of it goes to rank j
        let send = data::<T>(me, n * block, salt);
        let mut out = vec![T::gen(99, 0, 0); n * block];
        world.all_to_all(&send, &mut out).unwrap();
        let want: Vec<T> =
            (0..n).flat_map(|q| data::<T>(q, n * block, salt)[me * block..(me + 1) * block].to_vec()).collect();
        assert_same(&format!("all_to_all {} block {block}", T::DTYPE), &out, &want);
        // variable: rank q sends c(q, j) elements to j
        let c = |q: usize, j: usize| (len / 7 + q * 5 + j * 3) % (len / 3 + 2);
        let sc: Vec<usize> = (0..n).map(|j| c(me, j)).collect();
        let rc: Vec<usize> = (0..n).map(|q| c(q, me)).collect();
        let send = data::<T>(me, sc.iter().sum(), salt + 5);
        let mut out = vec![T::gen(99, 0, 0); rc.iter().sum()];
        world.all_to_all_v(&send, &sc, &mut out, &rc).unwrap();
        let mut want = Vec::new();
        for q in 0..n {
            let theirs = data::<T>(q, (0..n).map(|j| c(q, j)).sum(), salt + 5);
            let off: usize = (0..me).map(|j| c(q, j)).sum();
            want.extend_from_slice(&theirs[off..off + c(q, me)]);
        }
        assert_same(&format!("all_to_all_v {} len {len}", T::DTYPE), &out, &want);
    }
}

#[dist_runtime::test(ranks = [1, 2, 3, 4, 8], timeout = 120)]
fn all_to_all_fixed_and_variable(world: Comm<World>) {
    let mut r = runner();
    for_all_dtypes!(all_to_all_case(&world, &mut r));
}

#[dist_runtime::test(ranks = [1, 2, 3, 4, 8], timeout = 60)]
fn barrier_orders_side_effects(world: Comm<World>) {
    // Each rank appends to a shared file only after the barrier that follows the
    // previous rank's turn: the file must list ranks in order.
    let dir = std::env::temp_dir().join(format!("dist-barrier-{}", std::env::var("DIST_JOB_ID").unwrap_or_default()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("order");
    for turn in 0..world.size() {
        if turn == world.rank() {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&path).unwrap();
            writeln!(f, "{turn}").unwrap();
        }
        world.barrier().unwrap();
    }
    let got = std::fs::read_to_string(&path).unwrap();
    let want: String = (0..world.size()).map(|r| format!("{r}\n")).collect();
    assert_eq!(got, want);
    world.barrier().unwrap();
    if world.rank() == 0 {
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug, Clone)]
struct Shard {
    rank: usize,
    name: String,
    sizes: Vec<u32>,
}

#[dist_runtime::test(ranks = [1, 2, 3, 4, 8])]
fn object_collectives(world: Comm<World>) {
    let (n, me) = (world.size(), world.rank());
    let shard = |q: usize| Shard { rank: q, name: "x".repeat(q * 3), sizes: (0..q as u32 * 100).collect() };
    let all = world.all_gather_object(&shard(me)).unwrap();
    assert_eq!(all, (0..n).map(shard).collect::<Vec<_>>());
    let root = n - 1;
    let got: Shard = world.broadcast_object(if me == root { Some(shard(42)) } else { None }, root).unwrap();
    assert_eq!(got, shard(42));
    let g = world.gather_object(&shard(me), 0).unwrap();
    if me == 0 {
        assert_eq!(g.unwrap(), (0..n).map(shard).collect::<Vec<_>>());
    } else {
        assert!(g.is_none());
    }
}

#[dist_runtime::test(ranks = [1, 2, 4, 8])]
fn async_collectives_keep_order_with_blocking_ones(world: Comm<World>) {
    let n = world.size() as f64;
    let mut a = vec![1.0f64; 10_000];
    let mut b = vec![world.rank() as f64; 3];
    let mut c = vec![0u32; 5];
    if world.rank() == 0 {
        c = vec![9; 5];
    }
    {
        let ra = world.all_reduce_async(&mut a, ReduceOp::Sum).unwrap();
        let rc = world.broadcast_async(&mut c, 0).unwrap();
        // a blocking collective in between must wait for the queued ones
        world.all_reduce(&mut b, ReduceOp::Max).unwrap();
        ra.wait().unwrap();
        rc.wait().unwrap();
    }
    assert!(a.iter().all(|&x| x == n));
    assert_eq!(b, vec![n - 1.0; 3]);
    assert_eq!(c, vec![9; 5]);
}

/// The non-blocking all_gather and reduce_scatter against the serial reference, every
/// dtype and op, lengths from 0: several in flight at once (all queued before any is
/// waited on, a blocking collective in between), results checked after the waits.
fn async_pair_case<T: Num>(world: &Comm<World>, r: &mut proptest::test_runner::TestRunner) {
    let (n, me) = (world.size(), world.rank());
    for (k, len) in lengths::<T>(r, 1).into_iter().enumerate() {
        let block = len / n.max(1) + (k % 3);
        let ops = ops::<T>();
        let salt = k as u64 * 13 + 5;
        let shards: Vec<Vec<T>> = (0..n).map(|q| data(q, block, salt)).collect();
        let mine = shards[me].clone();
        let mut gathered = vec![T::gen(99, 0, 0); n * block];
        let inputs: Vec<Vec<Vec<T>>> = ops
            .iter()
            .enumerate()
            .map(|(i, _)| (0..n).map(|q| data(q, n * block, salt + 1 + i as u64)).collect())
            .collect();
        let mut outs: Vec<Vec<T>> = ops.iter().map(|_| vec![T::gen(98, 0, 0); block]).collect();
        {
            let g = world.all_gather_async(&mine, &mut gathered).unwrap();
            let mut reqs = Vec::new();
            for ((op, inp), out) in ops.iter().zip(&inputs).zip(outs.iter_mut()) {
                reqs.push(world.reduce_scatter_async(&inp[me], out, *op).unwrap());
            }
            let mut b = [me as u64];
            world.all_reduce(&mut b, ReduceOp::Sum).unwrap();
            assert_eq!(b[0] as usize, n * (n - 1) / 2);
            g.wait().unwrap();
            dist_runtime::wait_all(reqs).unwrap();
        }
        let want: Vec<T> = shards.concat();
        assert_same(&format!("all_gather_async {} block {block}", T::DTYPE), &gathered, &want);
        for ((op, inp), out) in ops.iter().zip(&inputs).zip(&outs) {
            let full = reduce_ref(inp, *op);
            let what = format!("reduce_scatter_async {op:?} {} block {block}", T::DTYPE);
            assert_reduced(&what, out, &full[me * block..(me + 1) * block], *op, n);
        }
    }
}

#[dist_runtime::test(ranks = [1, 2, 3, 4, 8], timeout = 120)]
fn async_all_gather_and_reduce_scatter_against_the_reference(world: Comm<World>) {
    let mut r = runner();
    for_all_dtypes!(async_pair_case(&world, &mut r));
}

/// Empty and odd-length buffers through the async worker (whose copy must be aligned
/// for the element type; an empty f32 all_reduce_async used to panic the worker and hang
/// the next collective), every dtype width, with a blocking collective after each.
#[dist_runtime::test(ranks = [1, 2, 3])]
fn async_collectives_on_empty_and_odd_buffers(world: Comm<World>) {
    let n = world.size();
    for len in [0usize, 1, 3, 17] {
        let mut f = vec![1.5f32; len];
        let mut d = vec![world.rank() as f64; len];
        let mut h = vec![half::f16::from_f32(1.0); len];
        let mut b = vec![if world.rank() == 0 { 7u64 } else { 0 }; len];
        let rf = world.all_reduce_async(&mut f, ReduceOp::Sum).unwrap();
        let rd = world.all_reduce_async(&mut d, ReduceOp::Max).unwrap();
        let rh = dist_runtime::Comm::all_reduce_async(&world, &mut h, ReduceOp::Sum).unwrap();
        let rb = world.broadcast_async(&mut b, 0).unwrap();
        dist_runtime::wait_all([rf, rd, rh, rb]).unwrap();
        assert!(f.iter().all(|&x| x == 1.5 * n as f32), "{f:?}");
        assert!(d.iter().all(|&x| x == (n - 1) as f64), "{d:?}");
        assert!(h.iter().all(|&x| x == half::f16::from_f32(n as f32)), "{h:?}");
        assert!(b.iter().all(|&x| x == 7), "{b:?}");
        world.barrier().unwrap();
    }
}

/// Runs a registered test entry with extra environment (to force a code path).
/// The knobs are the shared-memory backend's (its algorithms, single-copy path and
/// pinning): on DIST_BACKEND=mpi they change nothing, so the run is skipped there rather
/// than repeating the suites the mpi run already covers.
fn run_with_env(entry: &str, sizes: &[usize], env: &[(&str, &str)]) {
    if std::env::var("DIST_BACKEND").is_ok_and(|b| b.eq_ignore_ascii_case("mpi")) {
        println!("{entry} with {env:?}: shared-memory knobs; skipped on DIST_BACKEND=mpi");
        return;
    }
    let env: Vec<(&str, &str)> = env.iter().copied().chain([("DIST_DEBUG", "check")]).collect();
    launch_each(entry, sizes, &env);
}

/// The single-copy path (process_vm_readv) normally starts at 16 KiB blocks while ranks
/// fit the cores; force it for every block so the property tests above cover it at every
/// length. Forced, a probe that fails is an error, so these runs also prove the path was
/// taken (the probe once raced with peers still joining and turned it off unseen).
#[test]
fn single_copy_gathers_broadcast_and_all_to_all() {
    let env = [("DIST_CMA", "1"), ("DIST_CMA_MIN", "1")];
    run_with_env("collectives::gather_scatter_and_variable_counts", &[2, 3, 8], &env);
    run_with_env("collectives::all_to_all_fixed_and_variable", &[2, 3, 8], &env);
    run_with_env("collectives::broadcast_from_random_roots", &[2, 3, 8], &env);
}

/// With the checks off nothing compares the calls before data moves. Ranks whose lengths
/// disagree at a single-copy collective (rank 0 passes half of what the others pass) get
/// `Error::Mismatch` from the lengths each rank lends, and nobody reads or writes past what
/// a peer lent (was: an all_gather read past the end of rank 0's buffer, and returned its
/// neighbour's bytes); every rank leaves the op in step.
#[spmd(unchecked)]
fn single_copy_lengths_that_disagree(world: Comm<World>) -> dist_runtime::Result<()> {
    let (me, n) = (world.rank(), world.size());
    // u32, a multiple of n (all_to_all): about 256 KiB and 512 KiB a block.
    let len = n * if me == 0 { 1 << 16 } else { 1 << 17 };
    let lent = |r: dist_runtime::Result<()>, what: &str| match r {
        Err(e @ dist_runtime::Error::Mismatch { .. }) if e.to_string().contains("lent a buffer of") => {}
        other => panic!("{what} with lengths that disagree: expected a mismatch of lent lengths, got {other:?}"),
    };
    let send = data::<u32>(me, len, 1);
    let mut all = vec![0u32; len * n];
    lent(world.all_gather(&send, &mut all), "all_gather");
    let mut buf = data::<u32>(me, len, 2);
    lent(world.broadcast(&mut buf, 0), "broadcast");
    let mut recv = vec![0u32; len];
    lent(world.all_to_all(&send, &mut recv), "all_to_all");
    // Every rank left each of them in step: a collective after them completes.
    let mut x = [me as u64 + 1];
    world.all_reduce(&mut x, ReduceOp::Sum)?;
    assert_eq!(x[0], (n * (n + 1) / 2) as u64);
    Ok(())
}

#[test]
fn single_copy_reads_nothing_past_a_lent_buffer_when_lengths_disagree() {
    if std::env::var("DIST_BACKEND").is_ok_and(|b| b.eq_ignore_ascii_case("mpi")) {
        // Open MPI's own behaviour with the checks off (docs/reliability.md row 72).
        println!("single-copy reads are the shared-memory backend's; skipped on DIST_BACKEND=mpi");
        return;
    }
    let env = [("DIST_CMA", "1"), ("DIST_DEBUG", "off"), ("DIST_BACKEND", "shm")];
    launch_each("collectives::single_copy_lengths_that_disagree", &[2, 3], &env);
}

/// With the checks on (the default), ranks whose lengths put them on different paths of
/// one collective (8 KiB against 32 KiB: the staging slots on one side, single-copy reads
/// on the other) get `Error::Mismatch` naming both calls, and leave the op in step: a
/// collective after it completes (was: "rank 1 called an unknown op at :0", and every
/// later collective failed).
#[spmd(unchecked)]
fn lengths_on_either_side_of_a_path_limit(world: Comm<World>) -> dist_runtime::Result<()> {
    let (me, n) = (world.rank(), world.size());
    for (small, large) in [(8usize << 10, 32usize << 10), (8 << 10, 16 << 10), (1000, 300 << 10)] {
        // u8, a multiple of n (all_to_all).
        let len = if me == 0 { small / n * n } else { large / n * n };
        let named = |r: dist_runtime::Result<()>, what: &str| match r {
            Err(e @ dist_runtime::Error::Mismatch { .. }) => {
                let t = e.to_string();
                assert!(!t.contains("unknown op"), "{what} {small}/{large}: {t}");
                assert!(t.contains(&format!("{what}(u8 × {}", small / n * n)) || me != 0, "{what}: {t}");
            }
            other => panic!("{what} with lengths {small} against {large}: expected a mismatch, got {other:?}"),
        };
        let send = vec![me as u8; len];
        let mut all = vec![0u8; len * n];
        named(world.all_gather(&send, &mut all), "all_gather");
        let mut buf = vec![me as u8; len];
        named(world.broadcast(&mut buf, 0), "broadcast");
        let mut recv = vec![0u8; len];
        named(world.all_to_all(&send, &mut recv), "all_to_all");
        // In step: a collective after them completes.
        let mut x = [me as u64 + 1];
        world.all_reduce(&mut x, ReduceOp::Sum)?;
        assert_eq!(x[0], (n * (n + 1) / 2) as u64);
    }
    Ok(())
}

#[test]
fn lengths_on_either_side_of_a_path_limit_are_a_mismatch_and_keep_the_ranks_in_step() {
    if std::env::var("DIST_BACKEND").is_ok_and(|b| b.eq_ignore_ascii_case("mpi")) {
        // The shared-memory backend's paths. (On MPI across two hosts an all_to_all of
        // 8 KiB against 32 KiB, on either side of the one-phase check's limit, waits for
        // its deadline instead: docs/reliability.md row 85.)
        println!("the shared-memory backend's paths; skipped on DIST_BACKEND=mpi");
        return;
    }
    launch_each("collectives::lengths_on_either_side_of_a_path_limit", &[2, 3], &[]);
}

/// A job whose very first op takes the single-copy path: every peer must be seen as
/// joined by the probe (it once read a peer still joining as pid 0, and quietly turned
/// single-copy reads off; forced, that is now an error).
#[spmd]
fn single_copy_first_thing(world: Comm<World>) -> dist_runtime::Result<()> {
    let (me, n) = (world.rank(), world.size());
    let mut all = vec![0u32; 9000 * n];
    world.all_gather(&data::<u32>(me, 9000, 7), &mut all)?;
    for j in 0..n {
        assert_same("all_gather, first op", &all[j * 9000..(j + 1) * 9000], &data::<u32>(j, 9000, 7));
    }
    Ok(())
}

#[test]
fn single_copy_works_from_the_first_op() {
    let env = [("DIST_CMA", "1")];
    for _ in 0..3 {
        run_with_env("collectives::single_copy_first_thing", &[2, 3, 8], &env);
    }
}

/// All-reduces past 1 MiB (many pipeline chunks, parts that do not divide evenly):
/// every dtype's sum, the float ops whose order shows (Max/Min on ±0, Avg, PreMulSum), a
/// non-commutative user reduction in items of 2; against the serial reference, bitwise.
#[spmd]
fn large_all_reduces(world: Comm<World>) {
    fn case<T: Num>(world: &Comm<World>, len: usize, ops: &[ReduceOp]) {
        let (n, me) = (world.size(), world.rank());
        for (k, &op) in ops.iter().enumerate() {
            let inputs: Vec<Vec<T>> = (0..n).map(|q| data(q, len, 90 + k as u64)).collect();
            let mut buf = inputs[me].clone();
            world.all_reduce(&mut buf, op).unwrap();
            let what = format!("large all_reduce {op:?} {} len {len} n {n} rank {me}", T::DTYPE);
            assert_reduced(&what, &buf, &reduce_ref(&inputs, op), op, n);
        }
    }
    let floats = [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::Avg, ReduceOp::PreMulSum(0.5)];
    case::<f32>(&world, (1 << 20) / 4 + 12_345, &floats);
    case::<f64>(&world, (3 << 20) / 8 + 1, &floats);
    case::<dist_runtime::bf16>(&world, (1 << 20) / 2 + 999, &[ReduceOp::Sum, ReduceOp::Avg]);
    case::<u8>(&world, (1 << 20) + 7, &[ReduceOp::Sum, ReduceOp::BXor]);
    case::<i64>(&world, (2 << 20) / 8 + 3, &[ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max]);
    let (n, me) = (world.size(), world.rank());
    let len = 2 * ((1 << 20) / 16 + 5);
    let inputs: Vec<Vec<u64>> = (0..n).map(|q| data(q, len, 77)).collect();
    let mut buf = inputs[me].clone();
    world.all_reduce(&mut buf, ReduceOp::user_items("compose", 2, compose)).unwrap();
    assert_same(&format!("large all_reduce compose n {n} rank {me}"), &buf, &fold(&inputs, compose));
}

#[test]
fn large_all_reduces_match_the_reference() {
    launch_each("collectives::large_all_reduces", &[1, 2, 3, 8], &[]);
}

/// And with it turned off, the copy-through path handles every size.
#[test]
fn copy_through_path_when_single_copy_is_off() {
    let env = [("DIST_CMA", "0")];
    run_with_env("collectives::gather_scatter_and_variable_counts", &[2, 4], &env);
    run_with_env("collectives::all_to_all_fixed_and_variable", &[2, 4], &env);
}

/// Every DIST_ALGO choice gives the serial reference's results: the flat path for every
/// size that fits a slot, and the pipelined path even for one element.
#[test]
fn forced_algorithms_agree_with_the_reference() {
    for algo in ["flat", "pipeline", "cma", "copy,pipeline"] {
        let env = [("DIST_ALGO", algo)];
        run_with_env("collectives::all_reduce_every_dtype_and_op", &[2, 3, 8], &env);
        run_with_env("collectives::reduce_to_random_roots", &[3], &env);
    }
    run_with_env("collectives::gather_scatter_and_variable_counts", &[3], &[("DIST_ALGO", "cma")]);
}

/// A misspelt DIST_ALGO is an error at init on every rank, naming the variable.
#[test]
fn unknown_algorithm_is_a_clear_error() {
    let r = dist_runtime::Launch::entry("collectives::barrier_orders_side_effects", 2)
        .unwrap()
        .capture(true)
        .env("DIST_ALGO", "tree")
        .timeout(std::time::Duration::from_secs(60))
        .run()
        .unwrap();
    assert!(!r.success());
    let out = r.summary();
    assert!(out.contains("DIST_ALGO=\"tree\": unknown algorithm"), "{out}");
}

/// DIST_PIN=1 binds each rank to a core; results are unchanged.
#[test]
fn pinned_ranks_agree_with_the_reference() {
    run_with_env("collectives::all_reduce_every_dtype_and_op", &[4], &[("DIST_PIN", "1")]);
}

/// Under DIST_ALGO=ring, floats are folded in ring order, not rank order: results must
/// equal the serial reference up to rounding, be exact for integers and for Max/Min, and
/// be the same bits on every rank. Lengths cross the ring's segment (n slots).
#[dist_runtime::test(ranks = [1, 2, 3, 4, 8], timeout = 120)]
fn all_reduce_within_rounding_of_the_reference(world: Comm<World>) {
    fn fnv(bytes: &[u8]) -> u64 {
        bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3))
    }
    fn same_everywhere(world: &Comm<World>, what: &str, bytes: &[u8]) {
        let mut all = vec![0u64; world.size()];
        world.all_gather(&[fnv(bytes)], &mut all).unwrap();
        assert!(all.iter().all(|&h| h == all[0]), "{what}: ranks got different bits");
    }
    let n = world.size();
    for (k, len) in [0usize, 1, 7, 1000, 600_000].into_iter().enumerate() {
        let inputs: Vec<Vec<f32>> = (0..n).map(|q| data(q, len, k as u64 * 7)).collect();
        for op in ops::<f32>() {
            let mut buf = inputs[world.rank()].clone();
            world.all_reduce(&mut buf, op).unwrap();
            let want = reduce_ref(&inputs, op);
            let what = format!("f32 all_reduce {op:?} len {len} n {n}");
            for (i, (g, w)) in buf.iter().zip(&want).enumerate() {
                assert!((g - w).abs() <= 1e-4 * w.abs().max(1.0), "{what}: element {i} is {g}, expected {w}");
            }
            if matches!(op, ReduceOp::Max | ReduceOp::Min) {
                assert_same(&what, &buf, &want);
            }
            same_everywhere(&world, &what, bytemuck::cast_slice(&buf));
        }
        let inputs: Vec<Vec<i64>> = (0..n).map(|q| data(q, len, k as u64)).collect();
        for op in ops::<i64>() {
            let mut buf = inputs[world.rank()].clone();
            world.all_reduce(&mut buf, op).unwrap();
            assert_same(&format!("i64 all_reduce {op:?} len {len} n {n}"), &buf, &reduce_ref(&inputs, op));
        }
    }
}

/// The ring all_reduce (DIST_ALGO=ring, for comparison) against the reference.
#[test]
fn ring_all_reduce_agrees_with_the_reference() {
    run_with_env("collectives::all_reduce_within_rounding_of_the_reference", &[2, 3, 4, 8], &[("DIST_ALGO", "ring")]);
}

/// Max and Min with a NaN: the NaN wins wherever any rank holds one, on every rank and
/// backend (shm, and MPI through its user-defined ops), for f32, f64 and bf16, whichever
/// rank holds it; other positions are the plain maximum and minimum.
#[dist_runtime::test(ranks = [1, 2, 3, 4, 8], timeout = 120)]
fn nan_wins_max_and_min_on_every_rank(world: Comm<World>) {
    let (n, me) = (world.size(), world.rank());
    let len = 2 * n + 3;
    for op in [ReduceOp::Max, ReduceOp::Min] {
        // Position p holds a NaN on rank p % n when p < n; the rest are finite.
        let val = |r: usize, p: usize| if p < n && p % n == r { f64::NAN } else { (r * 7 + p) as f64 % 11.0 - 5.0 };
        let want = |p: usize| {
            let v: Vec<f64> = (0..n).map(|r| val(r, p)).collect();
            if v.iter().any(|x| x.is_nan()) {
                f64::NAN
            } else if op == ReduceOp::Max {
                v.iter().copied().fold(f64::MIN, f64::max)
            } else {
                v.iter().copied().fold(f64::MAX, f64::min)
            }
        };
        let same = |got: f64, p: usize| (got.is_nan() && want(p).is_nan()) || got == want(p);
        let mut a: Vec<f32> = (0..len).map(|p| val(me, p) as f32).collect();
        world.all_reduce(&mut a, op).unwrap();
        let mut b: Vec<f64> = (0..len).map(|p| val(me, p)).collect();
        world.all_reduce(&mut b, op).unwrap();
        let mut c: Vec<dist_runtime::bf16> = (0..len).map(|p| dist_runtime::bf16::from_f64(val(me, p))).collect();
        world.all_reduce(&mut c, op).unwrap();
        for p in 0..len {
            assert!(same(a[p] as f64, p), "{op:?} f32 at {p}: {} vs {}", a[p], want(p));
            assert!(same(b[p], p), "{op:?} f64 at {p}: {} vs {}", b[p], want(p));
            assert!(same(c[p].to_f64(), p), "{op:?} bf16 at {p}: {} vs {}", c[p], want(p));
        }
    }
}

/// Every other non-blocking collective (reduce, all_gather_v, gather, gather_v, scatter,
/// all_to_all, all_to_all_v, barrier) against the serial reference, every dtype, lengths
/// from 0: all posted before any is waited on (several in flight on one communicator,
/// completing in call order) with a blocking collective in between.
fn async_rest_case<T: Num>(world: &Comm<World>, r: &mut proptest::test_runner::TestRunner) {
    let (n, me) = (world.size(), world.rank());
    for (k, len) in lengths::<T>(r, 1).into_iter().enumerate() {
        let salt = k as u64 * 17 + 3;
        let op = ops::<T>()[k % ops::<T>().len()];
        let root = draw(r, 0..n);
        let red_in: Vec<Vec<T>> = (0..n).map(|q| data(q, len, salt)).collect();
        let mut red = red_in[me].clone();
        let counts: Vec<usize> = (0..n).map(|q| if q % 3 == 1 { 0 } else { (len + q * 7) % 513 }).collect();
        let vin: Vec<Vec<T>> = (0..n).map(|q| data(q, counts[q], salt + 1)).collect();
        let wantv: Vec<T> = vin.concat();
        let mut agv = vec![T::gen(99, 0, 0); wantv.len()];
        let mut gv = vec![T::gen(99, 0, 0); wantv.len()];
        let shards: Vec<Vec<T>> = (0..n).map(|q| data(q, len, salt + 2)).collect();
        let mut g = vec![T::gen(99, 0, 0); n * len];
        let whole: Vec<T> = shards.concat();
        let mut sc = vec![T::gen(99, 0, 0); len];
        let block = len / n;
        let a2a_in = data::<T>(me, n * block, salt + 3);
        let mut a2a = vec![T::gen(99, 0, 0); n * block];
        let c = |q: usize, j: usize| (len / 5 + q * 3 + j) % (len / 2 + 2);
        let scounts: Vec<usize> = (0..n).map(|j| c(me, j)).collect();
        let rcounts: Vec<usize> = (0..n).map(|q| c(q, me)).collect();
        let a2av_in = data::<T>(me, scounts.iter().sum(), salt + 4);
        let mut a2av = vec![T::gen(99, 0, 0); rcounts.iter().sum()];
        {
            let mut reqs = vec![world.reduce_async(&mut red, op, root).unwrap()];
            reqs.push(world.all_gather_v_async(&vin[me], &mut agv, &counts).unwrap());
            reqs.push(world.barrier_async().unwrap());
            let gr = if me == root { Some(&mut g[..]) } else { None };
            reqs.push(world.gather_async(&shards[me], gr, root).unwrap());
            let gvr = if me == root { Some(&mut gv[..]) } else { None };
            reqs.push(world.gather_v_async(&vin[me], gvr, &counts, root).unwrap());
            let ss = if me == root { Some(&whole[..]) } else { None };
            reqs.push(world.scatter_async(ss, &mut sc, root).unwrap());
            let mut b = [1u32];
            world.all_reduce(&mut b, ReduceOp::Sum).unwrap();
            assert_eq!(b[0] as usize, n);
            reqs.push(world.all_to_all_async(&a2a_in, &mut a2a).unwrap());
            reqs.push(world.all_to_all_v_async(&a2av_in, &scounts, &mut a2av, &rcounts).unwrap());
            dist_runtime::wait_all(reqs).unwrap();
        }
        let what = |op: &str| format!("{op} {} len {len} n {n} root {root}", T::DTYPE);
        if me == root {
            assert_reduced(&what(&format!("reduce_async {op:?}")), &red, &reduce_ref(&red_in, op), op, n);
            assert_same(&what("gather_async"), &g, &whole);
            assert_same(&what("gather_v_async"), &gv, &wantv);
        } else {
            assert_same(&what("reduce_async (not the root: unchanged)"), &red, &red_in[me]);
        }
        assert_same(&what("all_gather_v_async"), &agv, &wantv);
        assert_same(&what("scatter_async"), &sc, &shards[me]);
        let want: Vec<T> =
            (0..n).flat_map(|q| data::<T>(q, n * block, salt + 3)[me * block..(me + 1) * block].to_vec()).collect();
        assert_same(&what("all_to_all_async"), &a2a, &want);
        let mut want = Vec::new();
        for q in 0..n {
            let theirs = data::<T>(q, (0..n).map(|j| c(q, j)).sum(), salt + 4);
            let off: usize = (0..me).map(|j| c(q, j)).sum();
            want.extend_from_slice(&theirs[off..off + c(q, me)]);
        }
        assert_same(&what("all_to_all_v_async"), &a2av, &want);
    }
}

#[dist_runtime::test(ranks = [1, 2, 3, 4, 8], timeout = 120)]
fn every_other_async_collective_against_the_reference(world: Comm<World>) {
    let mut r = runner();
    for_all_dtypes!(async_rest_case(&world, &mut r));
}

/// scatter_v and reduce_scatter_v (blocking and non-blocking) against the serial
/// reference, every dtype and op, with zero counts and counts that divide nothing.
fn v_variants_case<T: Num>(world: &Comm<World>, r: &mut proptest::test_runner::TestRunner) {
    let (n, me) = (world.size(), world.rank());
    for (k, len) in lengths::<T>(r, 1).into_iter().enumerate() {
        let salt = k as u64 * 19 + 7;
        // Rank j's share: uneven, some ranks get nothing.
        let counts: Vec<usize> = (0..n).map(|j| if j % 3 == 2 { 0 } else { (len * (j + 1) / n) % (len + 1) }).collect();
        let total: usize = counts.iter().sum();
        let first: usize = counts[..me].iter().sum();
        let root = draw(r, 0..n);
        let table = data::<T>(root, total, salt);
        let send = (me == root).then_some(&table[..]);
        let mut mine = vec![T::gen(99, 0, 0); counts[me]];
        world.scatter_v(send, &mut mine, &counts, root).unwrap();
        assert_same(&format!("scatter_v {} counts {counts:?}", T::DTYPE), &mine, &table[first..first + counts[me]]);
        let mut mine2 = vec![T::gen(98, 0, 0); counts[me]];
        world.scatter_v_async(send, &mut mine2, &counts, root).unwrap().wait().unwrap();
        assert_same(&format!("scatter_v_async {}", T::DTYPE), &mine2, &mine);
        let inputs: Vec<Vec<T>> = (0..n).map(|q| data(q, total, salt + 1)).collect();
        for op in ops::<T>() {
            let full = reduce_ref(&inputs, op);
            let mut out = vec![T::gen(97, 0, 0); counts[me]];
            world.reduce_scatter_v(&inputs[me], &mut out, &counts, op).unwrap();
            let what = format!("reduce_scatter_v {op:?} {} counts {counts:?}", T::DTYPE);
            assert_reduced(&what, &out, &full[first..first + counts[me]], op, n);
            let mut out2 = vec![T::gen(96, 0, 0); counts[me]];
            world.reduce_scatter_v_async(&inputs[me], &mut out2, &counts, op).unwrap().wait().unwrap();
            assert_same(&format!("reduce_scatter_v_async {op:?} {}", T::DTYPE), &out2, &out);
        }
    }
}

#[dist_runtime::test(ranks = [1, 2, 3, 4, 8], timeout = 120)]
fn scatter_v_and_reduce_scatter_v_against_the_reference(world: Comm<World>) {
    let mut r = runner();
    for_all_dtypes!(v_variants_case(&world, &mut r));
}

/// scan and exscan: rank r's result is the rank-order reduction of ranks 0..=r (0..r),
/// rank 0's exclusive result the op's identity; every dtype and op.
fn scan_case<T: Num>(world: &Comm<World>, r: &mut proptest::test_runner::TestRunner) {
    let (n, me) = (world.size(), world.rank());
    for (k, len) in lengths::<T>(r, 1).into_iter().enumerate() {
        let inputs: Vec<Vec<T>> = (0..n).map(|q| data(q, len, k as u64 * 23)).collect();
        for op in ops::<T>() {
            let mut inc = inputs[me].clone();
            world.scan(&mut inc, op).unwrap();
            let what = format!("scan {op:?} {} len {len} rank {me}", T::DTYPE);
            assert_reduced(&what, &inc, &reduce_ref(&inputs[..=me], op), op, me + 1);
            let mut exc = inputs[me].clone();
            world.exscan(&mut exc, op).unwrap();
            let what = format!("exscan {op:?} {} len {len} rank {me}", T::DTYPE);
            if me == 0 {
                assert_same(&what, &exc, &vec![T::identity(op); len]);
            } else {
                assert_reduced(&what, &exc, &reduce_ref(&inputs[..me], op), op, me);
            }
        }
    }
}

#[dist_runtime::test(ranks = [1, 2, 3, 4, 8], timeout = 120)]
fn scan_and_exscan_against_the_reference(world: Comm<World>) {
    let mut r = runner();
    for_all_dtypes!(scan_case(&world, &mut r));
}

/// scatter_object and object p2p: values of several shapes (empty, nested, long), sent
/// around a ring and scattered from every root, against what each rank can recompute.
#[dist_runtime::test(ranks = [1, 2, 3, 4, 8])]
fn object_scatter_and_point_to_point(world: Comm<World>) {
    const ITEM: Tag<(usize, Vec<String>)> = Tag::new(11);
    const NUMS: Tag<Vec<u64>> = Tag::new(11);
    let (n, me) = (world.size(), world.rank());
    let value = |j: usize| (j, (0..j % 4).map(|k| "ab".repeat(k * 300 + j)).collect::<Vec<String>>());
    for root in 0..n {
        let all: Vec<_> = (0..n).map(value).collect();
        let got = world.scatter_object((me == root).then_some(&all[..]), root).unwrap();
        assert_eq!(got, value(me), "scatter_object from root {root}");
    }
    // Ring: send to the right, receive from the left; two values of different types on
    // one tag number, in order.
    let (next, prev) = ((me + 1) % n, (me + n - 1) % n);
    if n > 1 {
        let big: Vec<u64> = (0..100_000 + me as u64).collect();
        if me % 2 == 0 {
            world.send_object(next, ITEM, &value(me)).unwrap();
            world.send_object(next, NUMS, &big).unwrap();
            assert_eq!(world.recv_object(prev, ITEM).unwrap(), value(prev));
            assert_eq!(world.recv_object(prev, NUMS).unwrap(), (0..100_000 + prev as u64).collect::<Vec<_>>());
        } else {
            assert_eq!(world.recv_object(prev, ITEM).unwrap(), value(prev));
            assert_eq!(world.recv_object(prev, NUMS).unwrap(), (0..100_000 + prev as u64).collect::<Vec<_>>());
            world.send_object(next, ITEM, &value(me)).unwrap();
            world.send_object(next, NUMS, &big).unwrap();
        }
    }
    // The root passes one value per rank (checked before anything moves; with one rank
    // no peer is left waiting for the root that refused).
    if n == 1 {
        let two = [value(0), value(1)];
        let e = world.scatter_object(Some(&two[..]), 0).map(|_| ()).unwrap_err().to_string();
        assert!(e.contains("passed 2 values; give one per rank (1)"), "{e}");
    }
}

/// Affine maps x ↦ a·x + b (wrapping u64) as flat pairs, composed left to right:
/// associative, not commutative, so only the rank order gives the reference.
fn compose(acc: &mut [u64], x: &[u64]) {
    for (p, q) in acc.chunks_exact_mut(2).zip(x.chunks_exact(2)) {
        let (a1, b1, a2, b2) = (p[0], p[1], q[0], q[1]);
        p[0] = a2.wrapping_mul(a1);
        p[1] = a2.wrapping_mul(b1).wrapping_add(b2);
    }
}

/// The element of larger magnitude; ties keep the earlier rank's (its sign shows which).
fn abs_max(acc: &mut [f32], x: &[f32]) {
    for (a, b) in acc.iter_mut().zip(x) {
        if b.abs() > a.abs() {
            *a = *b;
        }
    }
}

fn fold<T: Copy>(inputs: &[Vec<T>], f: fn(&mut [T], &[T])) -> Vec<T> {
    let mut acc = inputs[0].clone();
    for x in &inputs[1..] {
        f(&mut acc, x);
    }
    acc
}

fn user_case<T: Num>(world: &Comm<World>, f: fn(&mut [T], &[T]), name: &'static str, width: usize) {
    // Lengths in whole items of `width` elements: empty, one, odd, and past the slot.
    let items = [0usize, 1, 7, 1001, (300 << 10) / (width * std::mem::size_of::<T>()) + 3];
    user_items_case(world, f, name, width, &items);
}

fn user_items_case<T: Num>(
    world: &Comm<World>,
    f: fn(&mut [T], &[T]),
    name: &'static str,
    width: usize,
    lengths: &[usize],
) {
    let (n, me) = (world.size(), world.rank());
    let op = ReduceOp::user_items(name, width, f);
    for (k, &items) in lengths.iter().enumerate() {
        let len = items * width;
        let salt = 40 + k as u64;
        let inputs: Vec<Vec<T>> = (0..n).map(|q| data(q, len, salt)).collect();
        let what = |o: &str| format!("{o} with {name} len {len} n {n} rank {me}");
        let mut buf = inputs[me].clone();
        world.all_reduce(&mut buf, op).unwrap();
        assert_same(&what("all_reduce"), &buf, &fold(&inputs, f));
        let mut buf = inputs[me].clone();
        world.all_reduce_async(&mut buf, op).unwrap().wait().unwrap();
        assert_same(&what("all_reduce_async"), &buf, &fold(&inputs, f));
        let root = (k * 5 + 1) % n;
        let mut buf = inputs[me].clone();
        world.reduce(&mut buf, op, root).unwrap();
        let want = if me == root { fold(&inputs, f) } else { inputs[me].clone() };
        assert_same(&what("reduce"), &buf, &want);
        let mut buf = inputs[me].clone();
        world.reduce_async(&mut buf, op, root).unwrap().wait().unwrap();
        assert_same(&what("reduce_async"), &buf, &want);
        let mut buf = inputs[me].clone();
        world.scan(&mut buf, op).unwrap();
        assert_same(&what("scan"), &buf, &fold(&inputs[..=me], f));
        let mut buf = inputs[me].clone();
        world.exscan(&mut buf, op).unwrap();
        let want = if me == 0 { inputs[0].clone() } else { fold(&inputs[..me], f) };
        assert_same(&what("exscan (rank 0 keeps its buffer)"), &buf, &want);
        // reduce_scatter over blocks of whole items, even and uneven.
        let block = items / n * width;
        let rs_in: Vec<Vec<T>> = (0..n).map(|q| data(q, n * block, salt + 9)).collect();
        let full = fold(&rs_in, f);
        let mut out = vec![T::gen(99, 0, 0); block];
        world.reduce_scatter(&rs_in[me], &mut out, op).unwrap();
        assert_same(&what("reduce_scatter"), &out, &full[me * block..(me + 1) * block]);
        let mut out2 = vec![T::gen(98, 0, 0); block];
        world.reduce_scatter_async(&rs_in[me], &mut out2, op).unwrap().wait().unwrap();
        assert_same(&what("reduce_scatter_async"), &out2, &out);
        let counts: Vec<usize> = (0..n).map(|j| (items * (j + 1) / n - items * j / n) * width).collect();
        let first: usize = counts[..me].iter().sum();
        let mut out = vec![T::gen(97, 0, 0); counts[me]];
        world.reduce_scatter_v(&inputs[me], &mut out, &counts, op).unwrap();
        assert_same(&what("reduce_scatter_v"), &out, &fold(&inputs, f)[first..first + counts[me]]);
    }
}

/// User-defined reductions in every reducing op, against a serial fold in rank order:
/// a non-commutative one (affine maps) and one whose ties show the order (abs max).
#[dist_runtime::test(ranks = [1, 2, 3, 4, 8], timeout = 120)]
fn user_reductions_fold_in_rank_order(world: Comm<World>) {
    user_case::<u64>(&world, compose, "compose", 2);
    user_case::<f32>(&world, abs_max, "abs_max", 1);
    // Items larger than a rank's share of a staging slot (160 KB each; a 256 KiB slot's
    // share is 128 KiB at 2 ranks, 32 KiB at 8): one to a few of them per buffer.
    user_items_case::<u64>(&world, compose, "compose", 20_000, &[1, 2, 5]);
    // Buffers of part items are refused before anything moves.
    let mut odd = [1u64, 2, 3];
    let e = world.all_reduce(&mut odd, ReduceOp::user_items("compose", 2, compose)).unwrap_err().to_string();
    assert!(e.contains("not a whole number of items of 2"), "{e}");
    // A user reduction for another type is refused before anything moves.
    let mut ints = [1i32, 2];
    let e = world.all_reduce(&mut ints, ReduceOp::user("abs_max", abs_max)).unwrap_err().to_string();
    assert!(e.contains("combines f32 values, but the buffer holds i32"), "{e}");
    // Two ranks naming different reductions are told so (DIST_DEBUG=check is on by default).
    if world.size() > 1 {
        let mut x = [0.5f32];
        let name = if world.rank() == 0 { "abs_max" } else { "other" };
        let e = world.all_reduce(&mut x, ReduceOp::user(name, abs_max)).unwrap_err().to_string();
        assert!(e.contains("mismatched collective") && e.contains("user reduction"), "{e}");
    }
}

/// In-place collectives longer than one MPI call may move (MPI's counts are 32-bit) run
/// in parts on MPI. `DIST_MPI_MAX_COUNT=1000` makes buffers of 2 501 elements (and a
/// broadcast of 3 001 bytes) take three and four parts, so the split is checked against
/// the serial reference without 2 GiB buffers; on shm the variable means nothing and the
/// same results hold.
#[spmd]
fn in_place_collectives_in_parts(world: Comm<World>) {
    let (n, me) = (world.size(), world.rank());
    let len = 2501;
    let inputs: Vec<Vec<f64>> = (0..n).map(|q| data(q, len, 5)).collect();
    for op in [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Avg] {
        let mut buf = inputs[me].clone();
        world.all_reduce(&mut buf, op).unwrap();
        assert_reduced(&format!("all_reduce {op:?} in parts"), &buf, &reduce_ref(&inputs, op), op, n);
        let mut buf = inputs[me].clone();
        world.reduce(&mut buf, op, n - 1).unwrap();
        let want = if me == n - 1 { reduce_ref(&inputs, op) } else { inputs[me].clone() };
        assert_reduced(&format!("reduce {op:?} in parts"), &buf, &want, op, n);
        let mut buf = inputs[me].clone();
        world.scan(&mut buf, op).unwrap();
        assert_reduced(&format!("scan {op:?} in parts"), &buf, &reduce_ref(&inputs[..=me], op), op, me + 1);
    }
    let pattern: Vec<u8> = (0..3001).map(|i| (i % 251) as u8).collect();
    let mut b = if me == 0 { pattern.clone() } else { vec![0u8; 3001] };
    world.broadcast(&mut b, 0).unwrap();
    assert_eq!(b, pattern, "broadcast in parts");
}

#[test]
fn in_place_collectives_past_the_count_limit_run_in_parts() {
    launch_each("collectives::in_place_collectives_in_parts", &[1, 2, 3], &[("DIST_MPI_MAX_COUNT", "1000")]);
}
