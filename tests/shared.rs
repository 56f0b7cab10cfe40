//! Buffers from `Comm::alloc`: every collective that reads them in place, against the
//! serial reference, on every dtype and world size; ranks that mix allocated and other
//! memory, or buffers from different allocations, or parts at different offsets.

use dist_runtime::prelude::*;
use dist_runtime::SharedBuf;
use dist_tests::*;

/// Lengths past the in-place threshold (16 KiB per rank) too.
fn shared_lengths<T: Num>(r: &mut proptest::test_runner::TestRunner) -> Vec<usize> {
    let mut v = lengths::<T>(r, 1);
    if !short() {
        v.push((20 << 10) / std::mem::size_of::<T>() + 1);
    }
    v
}

fn filled<T: Num>(world: &Comm<World>, v: &[T]) -> SharedBuf<T> {
    let mut b = world.alloc::<T>(v.len()).unwrap();
    b.copy_from_slice(v);
    b
}

fn every_op_case<T: Num>(world: &Comm<World>, r: &mut proptest::test_runner::TestRunner) {
    let (n, me) = (world.size(), world.rank());
    let on_shm = world.backend() == "shm";
    for (k, len) in shared_lengths::<T>(r).into_iter().enumerate() {
        let salt = k as u64 * 13;
        // all_reduce, every op
        let inputs: Vec<Vec<T>> = (0..n).map(|q| data(q, len, salt + 4)).collect();
        for op in ops::<T>() {
            let mut buf = filled(world, &inputs[me]);
            assert_eq!(buf.zero_copy(), on_shm && n > 1 && len > 0, "zero_copy of {len} elements on {n} ranks");
            world.all_reduce(&mut buf, op).unwrap();
            let what = format!("shared all_reduce {op:?} {} len {len} n {n}", T::DTYPE);
            assert_reduced(&what, &buf, &reduce_ref(&inputs, op), op, n);
        }
        // broadcast
        let root = draw(r, 0..n);
        let mut buf = filled(world, &data::<T>(me, len, salt));
        world.broadcast(&mut buf, root).unwrap();
        assert_same(&format!("shared broadcast root {root} {} len {len}", T::DTYPE), &buf, &data::<T>(root, len, salt));
        // all_gather and gather
        let mine = filled(world, &data::<T>(me, len, salt + 1));
        let want: Vec<T> = (0..n).flat_map(|q| data::<T>(q, len, salt + 1)).collect();
        let mut out = vec![T::gen(99, 0, 0); n * len];
        world.all_gather(&mine, &mut out).unwrap();
        assert_same(&format!("shared all_gather {} len {len}", T::DTYPE), &out, &want);
        let root = draw(r, 0..n);
        if me == root {
            let mut out = vec![T::gen(99, 0, 0); n * len];
            world.gather(&mine, Some(&mut out[..]), root).unwrap();
            assert_same(&format!("shared gather root {root} {} len {len}", T::DTYPE), &out, &want);
        } else {
            world.gather(&mine, None, root).unwrap();
        }
        // reduce_scatter, every op; all_to_all
        let block = len / n.max(1) + k % 2;
        let inputs: Vec<Vec<T>> = (0..n).map(|q| data(q, n * block, salt + 2)).collect();
        for op in ops::<T>() {
            let send = filled(world, &inputs[me]);
            let mut out = vec![T::gen(99, 0, 0); block];
            world.reduce_scatter(&send, &mut out, op).unwrap();
            let full = reduce_ref(&inputs, op);
            let what = format!("shared reduce_scatter {op:?} {} block {block}", T::DTYPE);
            assert_reduced(&what, &out, &full[me * block..(me + 1) * block], op, n);
        }
        let send = filled(world, &data::<T>(me, n * block, salt + 3));
        let mut out = vec![T::gen(99, 0, 0); n * block];
        world.all_to_all(&send, &mut out).unwrap();
        let want: Vec<T> =
            (0..n).flat_map(|q| data::<T>(q, n * block, salt + 3)[me * block..(me + 1) * block].to_vec()).collect();
        assert_same(&format!("shared all_to_all {} block {block}", T::DTYPE), &out, &want);
    }
}

#[dist_runtime::test(ranks = [1, 2, 3, 4, 8], timeout = 180)]
fn every_collective_on_shared_buffers(world: Comm<World>) {
    let mut r = runner();
    for_all_dtypes!(every_op_case(&world, &mut r));
}

/// Ranks mixing memory: only some pass allocated buffers (every rank takes the usual
/// path then, after the first barrier says so), buffers from two different allocations,
/// and parts of one allocation at a different offset on each rank (in place still).
#[dist_runtime::test(ranks = [2, 3, 4, 8], timeout = 120)]
fn mixed_and_offset_buffers(world: Comm<World>) {
    let (n, me) = (world.size(), world.rank());
    let len = 40_000usize; // 160 KiB of f32: past the threshold, inside one slot chunk or several
    let inputs: Vec<Vec<f32>> = (0..n).map(|q| data(q, len, 5)).collect();
    let want = reduce_ref(&inputs, ReduceOp::Sum);
    let mut a = world.alloc::<f32>(len + 64 * n).unwrap();
    let mut b = world.alloc::<f32>(len).unwrap();
    for round in 0..4 {
        // Round 0: rank 0 alone in `a`; 1: even ranks in `a`, odd in `b`; 2: parts of `a`
        // at per-rank offsets; 3: every rank in `b`.
        let mut own = inputs[me].clone();
        let buf: &mut [f32] = match round {
            0 if me == 0 => &mut a[..len],
            0 => &mut own[..],
            1 if me % 2 == 0 => &mut a[..len],
            1 => &mut b[..],
            2 => &mut a[me * 64..me * 64 + len],
            _ => &mut b[..],
        };
        buf.copy_from_slice(&inputs[me]);
        world.all_reduce(buf, ReduceOp::Sum).unwrap();
        assert_reduced(&format!("all_reduce round {round}"), buf, &want, ReduceOp::Sum, n);
        buf.copy_from_slice(&inputs[me]);
        world.broadcast(buf, n - 1).unwrap();
        assert_same(&format!("broadcast round {round}"), buf, &inputs[n - 1]);
        buf.copy_from_slice(&inputs[me]);
        let mut all = vec![0f32; n * len];
        world.all_gather(buf, &mut all).unwrap();
        assert_same(&format!("all_gather round {round}"), &all, &inputs.concat());
    }
    // A rank that dropped its allocation passes other memory; the rest keep theirs.
    if me == 0 {
        drop(b);
        let mut own = inputs[0].clone();
        world.all_reduce(&mut own, ReduceOp::Sum).unwrap();
        assert_reduced("all_reduce after rank 0 dropped its buffer", &own, &want, ReduceOp::Sum, n);
    } else {
        b.copy_from_slice(&inputs[me]);
        world.all_reduce(&mut b, ReduceOp::Sum).unwrap();
        assert_reduced("all_reduce after rank 0 dropped its buffer", &b, &want, ReduceOp::Sum, n);
    }
}

/// The mixed cases where the usual path is the single-copy one (its first barrier also
/// watches for peers' allocated buffers).
#[test]
fn mixed_buffers_on_the_single_copy_path() {
    if std::env::var("DIST_BACKEND").is_ok_and(|b| b.eq_ignore_ascii_case("mpi")) {
        println!("single-copy paths are shm's; skipped on DIST_BACKEND=mpi");
        return;
    }
    launch_each("shared::mixed_and_offset_buffers", &[2, 3], &[("DIST_CMA", "1"), ("DIST_DEBUG", "check")]);
}

/// An allocation is a collective: ranks asking for different lengths are told so, naming
/// the call, rather than mapping files of different sizes.
#[dist_runtime::test(ranks = [2, 3], timeout = 60)]
fn allocations_must_agree(world: Comm<World>) {
    let len = if world.rank() == 1 { 2000 } else { 1000 };
    let e = world.alloc::<u64>(len).map(|_| ()).unwrap_err().to_string();
    assert!(e.contains("alloc(u64 × 1000") || e.contains("alloc(u64 × 2000"), "{e}");
}

fn horner(acc: &mut [u32], src: &[u32]) {
    for (a, s) in acc.iter_mut().zip(src) {
        *a = a.wrapping_mul(3).wrapping_add(*s);
    }
}

/// A user reduction that does not commute (`a·3 + b`), in items of 3 elements: every
/// rank folds its share in rank order, pieces never cut an item.
#[dist_runtime::test(ranks = [1, 2, 3, 4, 8], timeout = 60)]
fn a_user_reduction_folds_in_rank_order(world: Comm<World>) {
    let (n, me) = (world.size(), world.rank());
    for items in [0usize, 1, 5462, 70_001] {
        let len = 3 * items;
        let inputs: Vec<Vec<u32>> = (0..n).map(|q| data(q, len, 9)).collect();
        let mut want = inputs[0].clone();
        for inp in &inputs[1..] {
            horner(&mut want, inp);
        }
        let mut buf = world.alloc::<u32>(len).unwrap();
        buf.copy_from_slice(&inputs[me]);
        world.all_reduce(&mut buf, ReduceOp::user_items("horner", 3, horner)).unwrap();
        assert_same(&format!("user all_reduce of {items} items"), &buf, &want);
        let send = {
            let mut s = world.alloc::<u32>(len * n).unwrap();
            s.copy_from_slice(&data(me, len * n, 10));
            s
        };
        let mut out = vec![0u32; len];
        world.reduce_scatter(&send, &mut out, ReduceOp::user_items("horner", 3, horner)).unwrap();
        let mut want = data::<u32>(0, len * n, 10)[me * len..(me + 1) * len].to_vec();
        for q in 1..n {
            horner(&mut want, &data::<u32>(q, len * n, 10)[me * len..(me + 1) * len]);
        }
        assert_same(&format!("user reduce_scatter of {items} items"), &out, &want);
    }
}

dist_runtime::group!(Half);

/// Allocations on a split communicator (its own numbering of allocations) and a world
/// allocation passed to an op on the split one (the usual path there), and an `_async`
/// collective on an allocated buffer (the worker copies it): all against the reference.
#[dist_runtime::test(ranks = [2, 3, 4, 8], timeout = 120)]
fn allocations_on_split_communicators_and_async_ops(world: Comm<World>) {
    let (n, me) = (world.size(), world.rank());
    let half = world.split::<Half>((me % 2) as u32, me as i64).unwrap();
    let (hn, hme) = (half.size(), half.rank());
    let members: Vec<usize> = (0..n).filter(|r| r % 2 == me % 2).collect();
    let len = 30_000usize;
    let want = reduce_ref(&members.iter().map(|&q| data::<f64>(q, len, 3)).collect::<Vec<_>>(), ReduceOp::Sum);
    let mut on_world = world.alloc::<f64>(len).unwrap();
    let mut on_half = half.alloc::<f64>(len).unwrap();
    assert_eq!(on_half.zero_copy(), world.backend() == "shm" && hn > 1);
    for buf in [&mut on_half, &mut on_world] {
        buf.copy_from_slice(&data::<f64>(me, len, 3));
        half.all_reduce(&mut buf[..], ReduceOp::Sum).unwrap();
        assert_reduced(&format!("all_reduce on a half of {hn} (rank {hme})"), buf, &want, ReduceOp::Sum, hn);
    }
    let everyone = reduce_ref(&(0..n).map(|q| data::<f64>(q, len, 4)).collect::<Vec<_>>(), ReduceOp::Sum);
    on_world.copy_from_slice(&data::<f64>(me, len, 4));
    world.all_reduce_async(&mut on_world, ReduceOp::Sum).unwrap().wait().unwrap();
    assert_reduced("all_reduce_async on an allocated buffer", &on_world, &everyone, ReduceOp::Sum, n);
}

/// Large broadcasts of allocated buffers: at 2 ranks from 512 KiB they take the root's
/// helping hand (read and written with `process_vm_readv/writev`) instead of the in-place
/// read; every size and root lands the root's data.
#[dist_runtime::test(ranks = [2, 3])]
fn large_broadcasts_of_allocated_buffers(world: Comm<World>) {
    let (n, me) = (world.size(), world.rank());
    for (k, len) in [(512 << 10) - 1, 512 << 10, 1 << 20, (3 << 20) + 5].into_iter().enumerate() {
        for root in 0..n {
            let salt = 70 + k as u64;
            let mut buf = filled(&world, &data::<u8>(me, len, salt));
            world.broadcast(&mut buf, root).unwrap();
            assert_same(&format!("broadcast of {len} allocated bytes from {root}"), &buf, &data::<u8>(root, len, salt));
        }
    }
}
