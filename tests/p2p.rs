//! Point-to-point: blocking, non-blocking, batched, tag matching, messages larger than
//! the rings, against data every rank can regenerate.
// Entries here exercise the run-time checks: what the compile-time check cannot follow
// in them is expected (its warnings are `deprecated` uses; docs/static-checks.md).
#![allow(deprecated)]

use dist_runtime::prelude::*;
use dist_tests::*;

fn chain_case<T: Num>(world: &Comm<World>, tag: Tag<T>) {
    let (n, me) = (world.size(), world.rank());
    for (k, len) in [0usize, 1, 33, 4097, (1 << 20) / std::mem::size_of::<T>() + 5].into_iter().enumerate() {
        let salt = k as u64;
        if me > 0 {
            let mut buf = vec![T::gen(99, 0, 0); len];
            world.recv(me - 1, tag, &mut buf).unwrap();
            assert_same(&format!("chain recv {} len {len}", T::DTYPE), &buf, &data::<T>(me - 1, len, salt));
        }
        if me + 1 < n {
            world.send(me + 1, tag, &data::<T>(me, len, salt)).unwrap();
        }
    }
}

#[dist_runtime::test(ranks = [1, 2, 3, 4, 8])]
fn blocking_chain_every_dtype(world: Comm<World>) {
    chain_case::<u8>(&world, Tag::new(1));
    chain_case::<i8>(&world, Tag::new(2));
    chain_case::<i32>(&world, Tag::new(3));
    chain_case::<u32>(&world, Tag::new(4));
    chain_case::<i64>(&world, Tag::new(5));
    chain_case::<u64>(&world, Tag::new(6));
    chain_case::<dist_runtime::f16>(&world, Tag::new(7));
    chain_case::<dist_runtime::bf16>(&world, Tag::new(8));
    chain_case::<f32>(&world, Tag::new(9));
    chain_case::<f64>(&world, Tag::new(10));
    chain_case::<i16>(&world, Tag::new(12));
    chain_case::<u16>(&world, Tag::new(13));
    chain_case::<dist_runtime::Complex<f32>>(&world, Tag::new(14));
    chain_case::<dist_runtime::Complex<f64>>(&world, Tag::new(15));
    chain_case::<bool>(&world, Tag::new(16));
}

const RING: Tag<f64> = Tag::new(11);

fn shift_in_place<T: Num>(world: &Comm<World>, tag: Tag<T>, by: usize) {
    let (n, me) = (world.size(), world.rank());
    let (right, left) = ((me + by) % n, (me + n - by % n) % n);
    for (k, len) in [0usize, 1, 7, 4097, (300 << 10) / std::mem::size_of::<T>() + 3].into_iter().enumerate() {
        let mut block = data::<T>(me, len, k as u64);
        world.sendrecv_replace(right, tag, &mut block, left).unwrap();
        assert_same(
            &format!("sendrecv_replace {} len {len} by {by}", T::DTYPE),
            &block,
            &data::<T>(left, len, k as u64),
        );
    }
}

/// A shift in place (`MPI_Sendrecv_replace`) against the block every rank regenerates:
/// by one and by two around the ring (itself at one rank), several types and lengths.
#[dist_runtime::test(ranks = [1, 2, 3, 4, 8])]
fn sendrecv_replace_shifts_in_place(world: Comm<World>) {
    for by in [1, 2] {
        shift_in_place::<u8>(&world, Tag::new(20), by);
        shift_in_place::<i32>(&world, Tag::new(21), by);
        shift_in_place::<f64>(&world, Tag::new(22), by);
        shift_in_place::<dist_runtime::bf16>(&world, Tag::new(23), by);
        shift_in_place::<dist_runtime::Complex<f32>>(&world, Tag::new(24), by);
    }
}

#[dist_runtime::test(ranks = [1, 2, 3, 4, 8])]
fn ring_with_sendrecv(world: Comm<World>) {
    let (n, me) = (world.size(), world.rank());
    let (right, left) = ((me + 1) % n, (me + n - 1) % n);
    for len in [0usize, 5, 100_000, 300_000] {
        let mut got = vec![0.0; len];
        world.sendrecv(right, RING, &data::<f64>(me, len, 3), left, &mut got).unwrap();
        assert_same("ring", &got, &data::<f64>(left, len, 3));
    }
}

const ALL: Tag<u32> = Tag::new(12);

#[dist_runtime::test(ranks = [1, 2, 3, 4, 8])]
fn isend_irecv_to_everyone(world: Comm<World>) {
    let (n, me) = (world.size(), world.rank());
    let len = 70_000; // more than a ring holds at 8 ranks
    let sends: Vec<Vec<u32>> = (0..n).map(|j| data::<u32>(me * 100 + j, len, 1)).collect();
    let mut recvs: Vec<Vec<u32>> = vec![vec![0; len]; n];
    {
        let mut reqs = Vec::new();
        for (j, buf) in recvs.iter_mut().enumerate() {
            reqs.push(world.irecv(j, ALL, buf).unwrap());
        }
        for (j, buf) in sends.iter().enumerate() {
            reqs.push(world.isend(j, ALL, buf).unwrap());
        }
        // compute while messages fly; then complete all
        let busy: u64 = (0..10_000u64).sum();
        assert_eq!(busy, 49_995_000);
        dist_runtime::wait_all(reqs).unwrap();
    }
    for (j, got) in recvs.iter().enumerate() {
        assert_same("isend/irecv", got, &data::<u32>(j * 100 + me, len, 1));
    }
}

const HALO: Tag<i64> = Tag::new(13);
const SELF: Tag<i64> = Tag::new(14);

#[dist_runtime::test(ranks = [1, 2, 3, 4, 8])]
fn batch_halo_exchange_and_self_send(world: Comm<World>) {
    let (n, me) = (world.size(), world.rank());
    let (right, left) = ((me + 1) % n, (me + n - 1) % n);
    let to_left = data::<i64>(me, 1000, 1);
    let to_right = data::<i64>(me, 1000, 2);
    let to_self = data::<i64>(me, 10, 3);
    let (mut from_left, mut from_right, mut from_self) = (vec![0; 1000], vec![0; 1000], vec![0; 10]);
    world
        .batch(|b| {
            b.send(left, HALO, &to_left);
            b.send(right, HALO, &to_right);
            b.send(me, SELF, &to_self);
            b.recv(left, HALO, &mut from_left);
            b.recv(right, HALO, &mut from_right);
            b.recv(me, SELF, &mut from_self);
        })
        .unwrap();
    if n == 1 {
        // both halo messages come from ourselves, in posting order: left first, then right
        assert_same("halo n=1 first", &from_left, &to_left);
        assert_same("halo n=1 second", &from_right, &to_right);
    } else if n == 2 {
        // left == right: the first message from the peer is its "to_left"
        assert_same("halo n=2 first", &from_left, &data::<i64>(left, 1000, 1));
        assert_same("halo n=2 second", &from_right, &data::<i64>(right, 1000, 2));
    } else {
        assert_same("from left", &from_left, &data::<i64>(left, 1000, 2));
        assert_same("from right", &from_right, &data::<i64>(right, 1000, 1));
    }
    assert_same("self", &from_self, &to_self);
}

const A: Tag<u8> = Tag::new(21);
const B: Tag<u8> = Tag::new(22);

#[dist_runtime::test(ranks = [2, 3])]
fn tags_match_out_of_order_and_posting_order_is_kept(world: Comm<World>) {
    match world.rank() {
        0 => {
            // Non-blocking: blocking sends would wait for their receives (rendezvous, as
            // on NCCL), and rank 1 receives B before A on purpose.
            let (a1, b, a3, a4) = ([1u8, 1], [2u8, 2, 2], [3u8], [4u8]);
            let reqs = [
                world.isend(1, A, &a1).unwrap(),
                world.isend(1, B, &b).unwrap(),
                world.isend(1, A, &a3).unwrap(),
                world.isend(1, A, &a4).unwrap(),
            ];
            for r in reqs {
                r.wait().unwrap();
            }
        }
        1 => {
            // B first although A was sent first: A is stashed, not lost.
            let mut b = [0u8; 3];
            world.recv(0, B, &mut b).unwrap();
            assert_eq!(b, [2, 2, 2]);
            let mut a = [0u8; 2];
            world.recv(0, A, &mut a).unwrap();
            assert_eq!(a, [1, 1]);
            // two receives on one tag match in posting order even when waited in reverse
            let (mut x, mut y) = ([0u8], [0u8]);
            let rx = world.irecv(0, A, &mut x).unwrap();
            let ry = world.irecv(0, A, &mut y).unwrap();
            ry.wait().unwrap();
            rx.wait().unwrap();
            assert_eq!((x, y), ([3], [4]));
        }
        _ => {}
    }
}

const BIG: Tag<f32> = Tag::new(30);

// Wrong on purpose (rendezvous backends deadlock here): both ranks send 4 MiB first.
#[spmd(unchecked)]
fn both_send_first(world: Comm<World>) -> dist_runtime::Result<()> {
    let peer = 1 - world.rank();
    let mine = data::<f32>(world.rank(), 1 << 20, 9);
    world.send(peer, BIG, &mine)?; // @both-send
    let mut got = vec![0.0f32; 1 << 20];
    world.recv(peer, BIG, &mut got)?;
    assert_same("both send first", &got, &data::<f32>(peer, 1 << 20, 9));
    Ok(())
}

/// NCCL's semantics on CPU: with checks on (the default), a blocking send completes only
/// once its receive is posted, so two ranks that both send first deadlock as on NCCL
/// (and MPI for large messages) and the detector names both sends in about a second;
/// with `DIST_DEBUG=off` the shm backend buffers them and the exchange completes.
#[test]
fn both_send_first_deadlocks_as_on_nccl_unless_checks_are_off() {
    if std::env::var("DIST_BACKEND").is_ok_and(|b| b == "mpi") {
        println!("the shm backend's rendezvous mode; MPI: both_send_first_is_a_timeout_on_mpi");
        return;
    }
    let run = |debug: &str| {
        dist_runtime::Launch::entry("p2p::both_send_first", 2)
            .unwrap()
            .capture(true)
            .env("DIST_DEBUG", debug)
            .env("DIST_TIMEOUT", "300")
            .timeout(std::time::Duration::from_secs(60))
            .run()
            .unwrap()
    };
    let r = run("check");
    let all = r.summary();
    let src = include_str!("p2p.rs");
    let line = src.lines().position(|l| l.ends_with("// @both-send")).unwrap() + 1;
    assert!(all.contains(&format!("deadlock detected in send at tests/p2p.rs:{line}")), "{all}");
    assert!(
        all.contains(&format!("rank 0 waits in send to rank 1 with tag 30 on World (tests/p2p.rs:{line})")),
        "{all}"
    );
    assert!(
        all.contains(&format!("rank 1 waits in send to rank 0 with tag 30 on World (tests/p2p.rs:{line})")),
        "{all}"
    );
    assert!(r.elapsed < std::time::Duration::from_secs(10), "took {:?}: {all}", r.elapsed);
    let r = run("off");
    assert!(r.success(), "eager sends complete with DIST_DEBUG=off: {}", r.summary());
}

/// Both ranks send 4 MiB first: on MPI (rendezvous for large messages) neither send
/// completes. The deadlock detector (MPI's wait board) names it in about a second, as on
/// shm and as NCCL would hang: the culprit's error is the deadlock, naming the send's
/// line and both ranks' waits; the other rank hears of it as the culprit's failure.
#[spmd(unchecked)]
fn send_send(world: Comm<World>) -> Result<(), String> {
    let peer = 1 - world.rank();
    let mine = data::<f32>(world.rank(), 1 << 20, 9);
    world.send(peer, BIG, &mine).map_err(|e| e.to_string()) // @send-send
}

#[test]
fn both_send_first_is_a_deadlock_named_on_mpi() {
    if !std::env::var("DIST_BACKEND").is_ok_and(|b| b == "mpi") {
        println!("shm: both_send_first_deadlocks_as_on_nccl_unless_checks_are_off; this checks the MPI backend");
        return;
    }
    let r = dist_runtime::Launch::entry("p2p::send_send", 2)
        .unwrap()
        .capture(true)
        .env("DIST_TIMEOUT", "300")
        .timeout(std::time::Duration::from_secs(60))
        .run()
        .unwrap();
    let all = r.summary();
    println!("send/send on MPI: ended in {:?}", r.elapsed);
    let line = include_str!("p2p.rs").lines().position(|l| l.ends_with("// @send-send")).unwrap() + 1;
    for want in [
        format!("deadlock detected in send at tests/p2p.rs:{line}"),
        format!("rank 0 waits in send to rank 1 with tag 30 on World (tests/p2p.rs:{line})"),
        format!("rank 1 waits in send to rank 0 with tag 30 on World (tests/p2p.rs:{line})"),
        "wait-for cycle 0 → 1 → 0".to_string(),
    ] {
        assert!(all.contains(&want), "{want}: {all}");
    }
    assert_eq!(r.first_failure.map(|i| r.ranks[i].rank), Some(0), "{all}");
    assert!(r.elapsed < std::time::Duration::from_secs(10), "took {:?}: {all}", r.elapsed);
}

const DATA: Tag<u32> = Tag::new(5);
const ACK: Tag<u32> = Tag::new(6);

// Wrong on purpose: rank 0 sends on one tag, rank 1 receives on another (a port from
// code whose tags were renumbered). With rendezvous sends neither call can complete.
#[spmd(unchecked)]
fn tags_differ(world: Comm<World>) -> dist_runtime::Result<()> {
    if world.rank() == 0 {
        world.send(1, DATA, &[7u32; 4])?; // @tag-send
    } else {
        let mut got = [0u32; 4];
        world.recv(0, ACK, &mut got)?; // @tag-recv
    }
    Ok(())
}

/// A send and a receive between the same two ranks that wait on each other with
/// different tags: the deadlock names both tags (before: the two waits, the tags
/// nowhere). Rendezvous sends on shm; on MPI the small send completes eagerly and the
/// receiver's wait is what the error names.
#[test]
fn a_deadlock_between_different_tags_names_them() {
    let r = dist_runtime::Launch::entry("p2p::tags_differ", 2)
        .unwrap()
        .capture(true)
        .env("DIST_TIMEOUT", "20")
        .timeout(std::time::Duration::from_secs(60))
        .run()
        .unwrap();
    let all = r.summary();
    assert!(!r.success(), "{all}");
    let src = include_str!("p2p.rs");
    let line = |m: &str| src.lines().position(|l| l.ends_with(m)).unwrap() + 1;
    let (s, rv) = (line("// @tag-send"), line("// @tag-recv"));
    if std::env::var("DIST_BACKEND").is_ok_and(|b| b == "mpi") {
        // (The send completed eagerly: rank 0 left, and rank 1's wait is what is named.)
        assert!(all.contains(&format!("still waits on it in recv at tests/p2p.rs:{rv}")), "{all}");
        return;
    }
    assert!(
        all.contains(&format!("rank 1 waits in recv from rank 0 with tag 6 on World (tests/p2p.rs:{rv})")),
        "{all}"
    );
    assert!(
        all.contains(&format!(
            "the tags differ: rank 0 sends rank 1 tag 5 (tests/p2p.rs:{s}), and rank 1 receives from rank 0 with \
             tag 6 (tests/p2p.rs:{rv}), which that send does not match"
        )),
        "{all}"
    );
}

#[dist_runtime::test(ranks = [2])]
fn dropping_a_request_completes_it(world: Comm<World>) {
    let peer = 1 - world.rank();
    let mut got = vec![0.0f32; 50_000];
    let mine = data::<f32>(world.rank(), 50_000, 4);
    {
        let _s = world.isend(peer, BIG, &mine).unwrap();
        let _r = world.irecv(peer, BIG, &mut got).unwrap();
        // both dropped here: drop waits
    }
    assert_same("dropped requests", &got, &data::<f32>(peer, 50_000, 4));
}

dist_runtime::group!(Pair);
const LAST: Tag<u32> = Tag::new(40);

/// A sender that writes its last message and leaves at once must not look "failed" to a
/// receiver that was asleep past its health-check interval: the message is there.
#[dist_runtime::test(ranks = [2], timeout = 60)]
fn a_peer_that_sends_then_leaves_is_not_a_failure(world: Comm<World>) {
    for i in 0..20u32 {
        let pair = world.subgroup::<Pair>(&[0, 1]).unwrap().expect("both are members");
        if pair.rank() == 0 {
            std::thread::sleep(std::time::Duration::from_millis(60));
            pair.send(1, LAST, &[i; 3]).unwrap();
            drop(pair); // leaves the communicator right after the send
        } else {
            let mut got = [0u32; 3];
            pair.recv(0, LAST, &mut got).unwrap();
            assert_eq!(got, [i; 3]);
        }
        world.barrier().unwrap();
    }
}

const BIG_RING: Tag<f32> = Tag::new(31);

/// Posted receives are real on every backend: with messages far past any eager limit,
/// `irecv; send; wait` and `isend; irecv; wait the send first` complete in a ring (on MPI a
/// large send completes only once received, so a receive that exists only on paper would
/// deadlock them).
#[dist_runtime::test(ranks = [2, 3, 4])]
fn large_exchanges_with_posted_receives_complete(world: Comm<World>) {
    let (r, n) = (world.rank(), world.size());
    let (next, prev) = ((r + 1) % n, (r + n - 1) % n);
    let len = 1 << 18; // 1 MiB of f32
    let mine = data::<f32>(r, len, 11);
    // irecv, then a blocking send, then the receive's wait.
    let mut got = vec![0.0f32; len];
    let req = world.irecv(prev, BIG_RING, &mut got).unwrap();
    world.send(next, BIG_RING, &mine).unwrap();
    req.wait().unwrap();
    assert_same("irecv; send; wait", &got, &data::<f32>(prev, len, 11));
    // isend, irecv, and the send waited for first.
    let mut got = vec![0.0f32; len];
    let s = world.isend(next, BIG_RING, &mine).unwrap();
    let q = world.irecv(prev, BIG_RING, &mut got).unwrap();
    s.wait().unwrap();
    q.wait().unwrap();
    assert_same("isend; irecv; send.wait; recv.wait", &got, &data::<f32>(prev, len, 11));
}

/// Valid under rendezvous semantics (MPI_Ssend's, NCCL's): a receive posted before a
/// collective matches a blocking send made before that collective, although the
/// receiver reads nothing until the collective is over. Rank 0 receives from every
/// other rank; each of them sends, then all meet in a barrier, then rank 0 waits.
#[dist_runtime::test(ranks = [2, 3, 4])]
fn a_receive_posted_before_a_collective_releases_a_blocking_send(world: Comm<World>) {
    const P: Tag<u64> = Tag::new(41);
    let (me, n) = (world.rank(), world.size());
    if me == 0 {
        let mut got = vec![[0u64; 2]; n - 1];
        let reqs: Vec<_> = got.iter_mut().enumerate().map(|(i, g)| world.irecv(i + 1, P, g).unwrap()).collect();
        world.barrier().unwrap();
        for r in reqs {
            r.wait().unwrap();
        }
        for (i, g) in got.iter().enumerate() {
            assert_eq!(*g, [i as u64 + 1, 7]);
        }
    } else {
        world.send(0, P, &[me as u64, 7]).unwrap();
        world.barrier().unwrap();
    }
}

/// The same with messages past the single-copy threshold (8 KiB) that fit the ring (32 KiB
/// to 200 KB). On shm the sender offers its buffer, nobody reads it while rank 0 sits in
/// the barrier, so the sender takes the offer back and streams the message instead of
/// waiting (were it to wait for the read, this would deadlock). On MPI, which completes
/// such a send only once it is received, rank 0's barrier takes the messages of its
/// posted receives, as MPI does for an `MPI_Irecv` (before, this deadlocked there).
#[dist_runtime::test(ranks = [2, 3])]
fn a_large_send_that_fits_the_ring_is_not_held_by_a_busy_receiver(world: Comm<World>) {
    const P: Tag<u32> = Tag::new(43);
    let (me, n) = (world.rank(), world.size());
    for len in [8 << 10, 25_000, 50_000] {
        if me == 0 {
            let mut got = vec![vec![0u32; len]; n - 1];
            let reqs: Vec<_> = got.iter_mut().enumerate().map(|(i, g)| world.irecv(i + 1, P, g).unwrap()).collect();
            world.barrier().unwrap();
            for r in reqs {
                r.wait().unwrap();
            }
            for (i, g) in got.iter().enumerate() {
                assert_same("a send released by a posted receive", g, &data::<u32>(i + 1, len, 43));
            }
        } else {
            world.send(0, P, &data::<u32>(me, len, 43)).unwrap();
            world.barrier().unwrap();
        }
    }
}

/// Single-copy sends (8 KiB to 4 MiB, `DIST_CMA_P2P_MIN`) read by the receive being waited on,
/// stashed by a wait for another tag (the receive posted, not yet waited), refused for
/// a wrong length (and the next message still arriving whole), and from any source;
/// sizes at the threshold and just under it, around the ring's capacity, and past the
/// single-copy range (8 MiB: streamed). Run again below with the receiver under a
/// seccomp filter that fails `process_vm_readv` with EPERM (a sandbox): every offer is
/// declined and the messages stream through the ring, the data the same.
fn single_copy_cases(world: &Comm<World>) {
    const X: Tag<f64> = Tag::new(44);
    const Y: Tag<f64> = Tag::new(45);
    let me = world.rank();
    // Around the single-copy threshold (8 KiB), the two-halves threshold (64 KiB: 8192
    // f64), odd sizes, and past the ring and the 4 MiB where sends used to stream.
    let lens = [1000, 1024, 4097, 8191, 8192, 8193, 32 << 10, 40_000, 300_000, 1 << 20, 393_217, 2_500_001];
    for (k, &len) in lens.iter().enumerate() {
        let salt = 50 + k as u64;
        if me == 0 {
            world.send(1, X, &data::<f64>(0, len, salt)).unwrap();
            let mut back = vec![0.0; len];
            world.recv(1, X, &mut back).unwrap();
            assert_same("ping-pong back", &back, &data::<f64>(1, len, salt + 1));
            // X then Y, received Y first: X is read into the stash of its posted receive
            world.send(1, X, &data::<f64>(0, len, salt + 2)).unwrap();
            world.send(1, Y, &data::<f64>(0, 3, salt + 3)).unwrap();
            // a receive one element short refuses it; the next message arrives whole
            world.send(1, X, &data::<f64>(0, len, salt + 4)).unwrap();
            world.send(1, X, &data::<f64>(0, len, salt + 5)).unwrap();
            // a receive from any source
            world.send(1, Y, &data::<f64>(0, len, salt + 6)).unwrap();
        } else if me == 1 {
            let mut got = vec![0.0; len];
            world.recv(0, X, &mut got).unwrap();
            assert_same("ping-pong there", &got, &data::<f64>(0, len, salt));
            world.send(0, X, &data::<f64>(1, len, salt + 1)).unwrap();
            let mut x = vec![0.0; len];
            let rx = world.irecv(0, X, &mut x).unwrap();
            let mut y = vec![0.0; 3];
            world.recv(0, Y, &mut y).unwrap();
            rx.wait().unwrap();
            assert_same("stashed", &x, &data::<f64>(0, len, salt + 2));
            assert_same("the small one", &y, &data::<f64>(0, 3, salt + 3));
            if len > 0 {
                let mut short = vec![0.0; len - 1];
                let e = world.recv(0, X, &mut short).unwrap_err().to_string();
                assert!(e.contains("must match the message exactly"), "{e}");
            }
            let mut next = vec![0.0; len];
            world.recv(0, X, &mut next).unwrap();
            assert_same("after a refused one", &next, &data::<f64>(0, len, salt + 5));
            let mut any = vec![0.0; len + 7];
            let st = world.recv_any(Y, &mut any).unwrap();
            assert_eq!((st.source, st.count), (0, len));
            assert_same("from any source", &any[..len], &data::<f64>(0, len, salt + 6));
        }
    }
}

#[dist_runtime::test(ranks = [2, 3])]
fn single_copy_sends_land_where_their_receives_say(world: Comm<World>) {
    single_copy_cases(&world);
}

/// Makes every later `process_vm_readv` of this process fail with EPERM (all threads).
fn forbid_single_copy_reads() {
    forbid(libc::SYS_process_vm_readv);
}

/// Makes every later call of system call `nr` in this process fail with EPERM (all
/// threads), and checks that `process_vm_readv` does when it is the one forbidden.
fn forbid(nr: libc::c_long) {
    // classic BPF: load the syscall number; if it is `nr`, return ERRNO(EPERM)
    let nr = nr as u32;
    let filter = [
        libc::sock_filter { code: 0x20, jt: 0, jf: 0, k: 0 }, // BPF_LD | BPF_W | BPF_ABS, seccomp_data.nr
        libc::sock_filter { code: 0x15, jt: 0, jf: 1, k: nr }, // BPF_JMP | BPF_JEQ | BPF_K
        libc::sock_filter { code: 0x06, jt: 0, jf: 0, k: 0x0005_0000 | libc::EPERM as u32 }, // RET ERRNO
        libc::sock_filter { code: 0x06, jt: 0, jf: 0, k: 0x7fff_0000 }, // RET ALLOW
    ];
    let prog = libc::sock_fprog { len: filter.len() as u16, filter: filter.as_ptr() as *mut libc::sock_filter };
    // SAFETY: plain prctl/seccomp calls with a valid filter that outlives them.
    unsafe {
        assert_eq!(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0, "PR_SET_NO_NEW_PRIVS");
        let r = libc::syscall(libc::SYS_seccomp, 1 /* SET_MODE_FILTER */, 1 /* FLAG_TSYNC */, &prog);
        assert_eq!(r, 0, "seccomp: {}", std::io::Error::last_os_error());
    }
    if nr != libc::SYS_process_vm_readv as u32 {
        return;
    }
    let mut b = [0u8; 8];
    let (l, r) = (
        libc::iovec { iov_base: b.as_mut_ptr().cast(), iov_len: 8 },
        libc::iovec { iov_base: (&nr as *const u32).cast_mut().cast(), iov_len: 4 },
    );
    // SAFETY: reading our own memory; the filter makes it fail.
    let n = unsafe { libc::process_vm_readv(libc::getpid(), &l, 1, &r, 1, 0) };
    assert_eq!((n, std::io::Error::last_os_error().raw_os_error()), (-1, Some(libc::EPERM)));
}

#[dist_runtime::test(ranks = [2])]
fn a_receiver_that_cannot_read_its_senders_memory_still_gets_every_message(world: Comm<World>) {
    if world.backend() != "shm" {
        return; // the shm backend's single-copy path (Open MPI's own CMA would fail here)
    }
    if world.rank() == 1 {
        forbid_single_copy_reads();
    }
    world.barrier().unwrap();
    single_copy_cases(&world);
}

/// A sender helps its receiver copy a large message by writing half of it into the
/// receiver's buffer (`process_vm_writev`); where that is forbidden, the receiver reads
/// the whole message itself, and every message still arrives whole.
#[dist_runtime::test(ranks = [2])]
fn a_sender_that_cannot_write_into_its_receiver_still_delivers_every_message(world: Comm<World>) {
    if world.backend() != "shm" {
        return; // the shm backend's single-copy path
    }
    forbid(libc::SYS_process_vm_writev);
    let mut b = [0u8; 8];
    let src = [7u8; 8];
    let (l, r) = (
        libc::iovec { iov_base: src.as_ptr().cast_mut().cast(), iov_len: 8 },
        libc::iovec { iov_base: b.as_mut_ptr().cast(), iov_len: 8 },
    );
    // SAFETY: writing our own buffer; the filter makes it fail.
    let n = unsafe { libc::process_vm_writev(libc::getpid(), &l, 1, &r, 1, 0) };
    assert_eq!((n, std::io::Error::last_os_error().raw_os_error()), (-1, Some(libc::EPERM)));
    world.barrier().unwrap();
    single_copy_cases(&world);
}

/// A broadcast root helps its receivers copy (from 128 KiB on the single-copy path it
/// writes pieces into their buffers with `process_vm_writev`); a root that cannot write
/// leaves those pieces to the receivers, and every rank still gets the root's data, for
/// every root and sizes around the pieces' edges (past 2 MiB too: at 2 ranks every size
/// goes this way).
#[dist_runtime::test(ranks = [2, 3])]
fn a_broadcast_root_that_cannot_write_into_its_receivers_still_delivers(world: Comm<World>) {
    if world.backend() != "shm" {
        return; // the shm backend's single-copy path
    }
    let (n, me) = (world.size(), world.rank());
    let sizes = [100_000usize, 131_072, 131_073, 300_001, 1 << 20, (1 << 21) - 8, (5 << 20) + 3];
    // First with every rank able to write (the helped path), then with rank 0 unable to.
    for forbidden in [false, true] {
        if forbidden && me == 0 {
            forbid(libc::SYS_process_vm_writev);
        }
        world.barrier().unwrap();
        for root in 0..n {
            for (k, &len) in sizes.iter().enumerate() {
                let salt = 100 + k as u64 + forbidden as u64 * 50;
                let mut buf = if me == root { data::<u8>(root, len, salt) } else { vec![0u8; len] };
                world.broadcast(&mut buf, root).unwrap();
                assert_same(&format!("broadcast of {len} bytes from {root}"), &buf, &data::<u8>(root, len, salt));
            }
        }
    }
}

/// `Request::test` polls without blocking (torch's `is_completed`, MPI's `MPI_Test`):
/// sends, receives and non-blocking collectives end in `true` with the right data; a
/// receive whose message does not fit fails in `test` and again in `wait`.
#[dist_runtime::test(ranks = [2, 3, 4])]
fn requests_can_be_tested_without_blocking(world: Comm<World>) {
    const Q: Tag<u64> = Tag::new(42);
    let (r, n) = (world.rank(), world.size());
    let (next, prev) = ((r + 1) % n, (r + n - 1) % n);
    let mine = data::<u64>(r, 1000, 4);
    let mut got = vec![0u64; 1000];
    let mut recv = world.irecv(prev, Q, &mut got).unwrap();
    let mut send = world.isend(next, Q, &mine).unwrap();
    let start = std::time::Instant::now();
    let (mut s_done, mut r_done) = (false, false);
    while !(s_done && r_done) {
        s_done = s_done || send.test().unwrap();
        r_done = r_done || recv.test().unwrap();
        assert!(start.elapsed() < std::time::Duration::from_secs(30), "never completed");
        std::thread::yield_now();
    }
    assert!(send.is_completed() && recv.is_completed());
    send.wait().unwrap();
    recv.wait().unwrap();
    assert_same("tested receive", &got, &data::<u64>(prev, 1000, 4));
    // A non-blocking collective, tested to its end.
    let mut x = [r as u64 + 1];
    let mut req = world.all_reduce_async(&mut x, ReduceOp::Sum).unwrap();
    while !req.test().unwrap() {
        std::thread::yield_now();
    }
    req.wait().unwrap();
    assert_eq!(x[0], (n * (n + 1) / 2) as u64);
    // A message that does not fit: the error comes from test, and from wait again.
    world.isend(next, Q, &[1u64, 2, 3]).unwrap().wait().unwrap();
    let mut small = [0u64; 2];
    let mut bad = world.irecv(prev, Q, &mut small).unwrap();
    let e = loop {
        match bad.test() {
            Ok(true) => panic!("a 3-element message fit a 2-element receive"),
            Ok(false) => std::thread::yield_now(),
            Err(e) => break e,
        }
    };
    assert!(e.to_string().contains("receive buffer must match"), "{e}");
    assert!(bad.wait().is_err());
}

const ANY: Tag<u32> = Tag::new(41);
const GO: Tag<u8> = Tag::new(42);

/// wait_any, wait_some and wait_timeout: results as a serial reference predicts,
/// whatever the completion order; spent requests are skipped; an empty or spent set
/// returns at once; a set that cannot complete is a timeout naming its requests.
#[dist_runtime::test(ranks = [1, 2, 3, 4, 8])]
fn wait_any_some_and_timeout(world: Comm<World>) {
    let (r, n) = (world.rank(), world.size());
    let mut none: Vec<Request<'_>> = Vec::new();
    assert_eq!(dist_runtime::wait_any(&mut none).unwrap(), None);
    assert!(dist_runtime::wait_some(&mut none).unwrap().is_empty());
    // Rank 0 collects one message from every other rank, in any order; the senders
    // stagger their sends so the order differs from the posting order.
    if r == 0 {
        let mut got = vec![[0u32; 3]; n];
        {
            let mut reqs: Vec<_> =
                got.iter_mut().enumerate().skip(1).map(|(q, g)| world.irecv(q, ANY, g).unwrap()).collect();
            let mut seen = Vec::new();
            while let Some(i) = dist_runtime::wait_any(&mut reqs).unwrap() {
                assert!(!seen.contains(&i), "request {i} reported twice");
                seen.push(i);
            }
            seen.sort_unstable();
            assert_eq!(seen, (0..n - 1).collect::<Vec<_>>());
            // Spent: nothing left to report.
            assert_eq!(dist_runtime::wait_any(&mut reqs).unwrap(), None);
        }
        for (q, g) in got.iter().enumerate().skip(1) {
            assert_eq!(*g, [q as u32, 2 * q as u32, 3 * q as u32]);
        }
    } else {
        std::thread::sleep(std::time::Duration::from_millis(((n - r) * 3) as u64));
        world.send(0, ANY, &[r as u32, 2 * r as u32, 3 * r as u32]).unwrap();
    }
    // wait_some over non-blocking collectives: every one reported once.
    let mut xs: Vec<[u64; 2]> = (0..4).map(|k| [r as u64 + k, 1]).collect();
    {
        let mut reqs: Vec<_> = xs.iter_mut().map(|x| world.all_reduce_async(x, ReduceOp::Sum).unwrap()).collect();
        let mut seen = Vec::new();
        while seen.len() < 4 {
            let some = dist_runtime::wait_some(&mut reqs).unwrap();
            assert!(!some.is_empty());
            seen.extend(some);
        }
        seen.sort_unstable();
        assert_eq!(seen, vec![0, 1, 2, 3]);
    }
    for (k, x) in xs.iter().enumerate() {
        assert_eq!(*x, [(n * (n - 1) / 2 + n * k) as u64, n as u64]);
    }
    if n < 2 {
        return;
    }
    // wait_timeout: false while the peer holds back, true once it sends. Then a set that
    // cannot complete within this rank's deadline is a timeout naming the request.
    if r == 0 {
        let mut one = [0u32];
        {
            let mut req = world.irecv(1, ANY, &mut one).unwrap();
            assert!(!req.wait_timeout(std::time::Duration::from_millis(20)).unwrap());
            world.send(1, GO, &[1]).unwrap();
            assert!(req.wait_timeout(std::time::Duration::from_secs(60)).unwrap());
            req.wait().unwrap();
        }
        assert_eq!(one, [99]);
        world.set_timeout(std::time::Duration::from_millis(300)).unwrap();
        let mut late = [0u32];
        {
            let mut reqs = vec![world.irecv(1, ANY, &mut late).unwrap()];
            let e = dist_runtime::wait_any(&mut reqs).unwrap_err().to_string();
            assert!(e.contains("wait_any") && e.contains("tests/p2p.rs"), "{e}");
            world.set_timeout(std::time::Duration::from_secs(300)).unwrap();
            world.send(1, GO, &[2]).unwrap();
        }
        assert_eq!(late, [100]);
    } else if r == 1 {
        let mut go = [0u8];
        world.recv(0, GO, &mut go).unwrap();
        world.send(0, ANY, &[99]).unwrap();
        world.recv(0, GO, &mut go).unwrap();
        world.send(0, ANY, &[100]).unwrap();
    }
}

const LEFT: Tag<i64> = Tag::new(43);
const RIGHT: Tag<i64> = Tag::new(44);

/// batch_async: a halo exchange posted as one request, completed by test polling or by
/// wait, at every size, against what each neighbour sent.
#[dist_runtime::test(ranks = [1, 2, 3, 4, 8])]
fn batch_async_halo_exchange(world: Comm<World>) {
    let (r, n) = (world.rank(), world.size());
    let (prev, next) = ((r + n - 1) % n, (r + 1) % n);
    for (k, len) in [0usize, 1, 1000, 70_000].into_iter().enumerate() {
        let edge = data::<i64>(r, len, k as u64);
        let (mut from_prev, mut from_next) = (vec![0i64; len], vec![0i64; len]);
        {
            let mut req = world
                .batch_async(|b| {
                    b.recv(prev, RIGHT, &mut from_prev);
                    b.recv(next, LEFT, &mut from_next);
                    b.send(next, RIGHT, &edge);
                    b.send(prev, LEFT, &edge);
                })
                .unwrap();
            if k % 2 == 0 {
                let start = std::time::Instant::now();
                while !req.test().unwrap() {
                    assert!(start.elapsed() < std::time::Duration::from_secs(60), "never completed");
                    std::thread::yield_now();
                }
            }
            req.wait().unwrap();
        }
        assert_same("from the previous rank", &from_prev, &data::<i64>(prev, len, k as u64));
        assert_same("from the next rank", &from_next, &data::<i64>(next, len, k as u64));
    }
}

const WORK: Tag<u32> = Tag::new(45);
const WORK_F: Tag<f32> = Tag::new(45);
const FIRST: Tag<u32> = Tag::new(46);

/// recv_any: a manager takes every worker's messages exactly once, each source's in the
/// order sent, with the status naming the sender and the length (0 included); a receive
/// naming its source claims that source's next message first; several pending
/// irecv_any are served in posting order; test/wait_timeout poll; a message longer than
/// the buffer or of another type is a typed error naming recv_any.
#[dist_runtime::test(ranks = [1, 2, 3, 4, 8])]
fn recv_any_matches_every_message_once(world: Comm<World>) {
    let (r, n) = (world.rank(), world.size());
    // Worker q sends q messages: message k holds (k + q) % 5 values 1000q + k.
    let msg = |q: usize, k: usize| vec![(1000 * q + k) as u32; (k + q) % 5];
    if r == 0 {
        let total: usize = (1..n).sum();
        // Rank 1's first message is claimed by a receive naming it, posted first.
        let mut first = vec![0u32; msg(1, 0).len()];
        let mut next = vec![0usize; n];
        if n > 1 {
            next[1] = 1;
        }
        {
            let named = (n > 1).then(|| world.irecv(1, WORK, &mut first).unwrap());
            for _ in 0..total.saturating_sub(1) {
                let mut buf = [u32::MAX; 8];
                let st = world.recv_any(WORK, &mut buf).unwrap();
                let q = st.source;
                assert!(q > 0 && q < n, "status names rank {q}");
                let want = msg(q, next[q]);
                assert_eq!((st.count, &buf[..st.count]), (want.len(), &want[..]), "from rank {q}");
                assert!(buf[st.count..].iter().all(|&x| x == u32::MAX), "wrote past the message");
                next[q] += 1;
            }
            if let Some(named) = named {
                named.wait().unwrap();
            }
        }
        if n > 1 {
            assert_eq!(first, msg(1, 0));
        }
        assert_eq!(next, (0..n).collect::<Vec<_>>(), "every message once");
    } else {
        for k in 0..r {
            world.send(0, WORK, &msg(r, k)).unwrap();
        }
    }
    world.barrier().unwrap();
    if n < 2 {
        return;
    }
    // Several irecv_any pending: served in posting order, waited in reverse.
    if r == 0 {
        let (mut a, mut b, mut c) = ([0u32; 2], [0u32; 2], [0u32; 2]);
        {
            let ra = world.irecv_any(FIRST, &mut a).unwrap();
            let mut rb = world.irecv_any(FIRST, &mut b).unwrap();
            assert_eq!(rb.test().unwrap(), None);
            world.send(1, GO, &[1]).unwrap();
            let mut rc = world.irecv_any(FIRST, &mut c).unwrap();
            let sc = rc.wait_timeout(std::time::Duration::from_secs(60)).unwrap().expect("came");
            let sb = rb.wait_timeout(std::time::Duration::from_secs(60)).unwrap().expect("came");
            let sa = ra.wait().unwrap();
            assert_eq!([sa.source, sb.source, sc.source], [1, 1, 1]);
            assert_eq!([sa.count, sb.count, sc.count], [2, 1, 0]);
        }
        assert_eq!((a, b[0]), ([10, 10], 11));
        // Longer than the buffer, or another element type: typed errors.
        let mut small = [0u32; 1];
        let e = world.recv_any(WORK, &mut small).unwrap_err().to_string();
        assert!(e.contains("recv_any") && e.contains("no longer than its buffer") && e.contains("p2p.rs"), "{e}");
        let mut f = [0f32; 4];
        let e = world.recv_any(WORK_F, &mut f).unwrap_err().to_string();
        assert!(e.contains("recv_any") && e.contains("u32"), "{e}");
    } else if r == 1 {
        let mut go = [0u8];
        world.recv(0, GO, &mut go).unwrap();
        world.send(0, FIRST, &[10u32, 10]).unwrap();
        world.send(0, FIRST, &[11u32]).unwrap();
        world.send(0, FIRST, &[0u32; 0]).unwrap();
        world.send(0, WORK, &[1u32, 2]).unwrap();
        world.send(0, WORK, &[3u32]).unwrap();
    }
}

dist_runtime::group!(Odd);

/// On a subgroup, the status names the sender in the group's numbering.
#[dist_runtime::test(ranks = [2, 4, 8])]
fn recv_any_on_a_subgroup_names_group_ranks(world: Comm<World>) {
    let n = world.size();
    let odd: Vec<usize> = (1..n).step_by(2).collect();
    let Some(g) = world.subgroup::<Odd>(&odd).unwrap() else { return };
    let (r, m) = (g.rank(), g.size());
    if r == 0 {
        let mut seen = vec![0u32; m];
        for _ in 1..m {
            let mut v = [0u32];
            let st = g.recv_any(WORK, &mut v).unwrap();
            assert_eq!(v[0] as usize, g.world_rank_of(st.source).unwrap());
            seen[st.source] += 1;
        }
        assert!(seen[1..].iter().all(|&k| k == 1), "{seen:?}");
    } else {
        g.send(0, WORK, &[world.rank() as u32]).unwrap();
    }
}

const PARTS: Tag<f64> = Tag::new(47);

/// Messages longer than one MPI call may move (MPI's counts are 32-bit: 2 GiB) go in
/// parts on MPI. `DIST_MPI_MAX_COUNT=1000` makes payloads of 5 608 bytes (701 f64) take
/// six parts, so the split is checked against the senders' data without 2 GiB buffers:
/// blocking and non-blocking, receives waited out of order (the later one takes the
/// earlier one's parts into its stash), from any source, and a receive of the wrong
/// length refused with the message's parts taken off the wire (the next message still
/// lands whole). On shm the variable means nothing and the same results hold.
#[spmd]
fn p2p_in_parts(world: Comm<World>) {
    let (r, n) = (world.rank(), world.size());
    let (next, prev) = ((r + 1) % n, (r + n - 1) % n);
    let len = 701;
    let mine = |k: u64| data::<f64>(r, len, 40 + k);
    let theirs = |k: u64| data::<f64>(prev, len, 40 + k);
    // Blocking, in a ring.
    let mut got = vec![0.0; len];
    world.sendrecv(next, PARTS, &mine(0), prev, &mut got).unwrap();
    assert_same("sendrecv in parts", &got, &theirs(0));
    // Two isends; their receives waited in reverse order.
    let (a, b) = (mine(1), mine(2));
    let s1 = world.isend(next, PARTS, &a).unwrap();
    let s2 = world.isend(next, PARTS, &b).unwrap();
    let (mut g1, mut g2) = (vec![0.0; len], vec![0.0; len]);
    let q1 = world.irecv(prev, PARTS, &mut g1).unwrap();
    let q2 = world.irecv(prev, PARTS, &mut g2).unwrap();
    q2.wait().unwrap();
    q1.wait().unwrap();
    s1.wait().unwrap();
    s2.wait().unwrap();
    assert_same("first isend in parts", &g1, &theirs(1));
    assert_same("second isend in parts", &g2, &theirs(2));
    // A receive of the wrong length: refused, and the next message arrives whole.
    let (c, d) = (mine(3), mine(4));
    let s3 = world.isend(next, PARTS, &c).unwrap();
    let s4 = world.isend(next, PARTS, &d).unwrap();
    let mut short = vec![0.0; len - 1];
    let e = world.recv(prev, PARTS, &mut short).unwrap_err().to_string();
    assert!(e.contains("must match the message"), "{e}");
    let mut got = vec![0.0; len];
    world.recv(prev, PARTS, &mut got).unwrap();
    assert_same("the message after a refused one", &got, &theirs(4));
    s3.wait().unwrap();
    s4.wait().unwrap();
    // From any source: rank 0 takes one message from every other rank.
    world.barrier().unwrap();
    if r == 0 {
        let mut seen = vec![false; n];
        for _ in 1..n {
            let mut buf = vec![0.0; len + 5];
            let st = world.recv_any(PARTS, &mut buf).unwrap();
            assert_eq!(st.count, len);
            assert_same("recv_any in parts", &buf[..len], &data::<f64>(st.source, len, 45));
            assert!(!seen[st.source], "rank {} twice", st.source);
            seen[st.source] = true;
        }
    } else {
        world.send(0, PARTS, &mine(5)).unwrap();
    }
}

#[test]
fn messages_past_the_count_limit_go_in_parts() {
    launch_each("p2p::p2p_in_parts", &[1, 2, 3], &[("DIST_MPI_MAX_COUNT", "1000")]);
}

/// On MPI the largest tag (the library's `MPI_TAG_UB`, read at init: 2^31 - 1 on ob1,
/// 2^23 - 1 over UCX) is dist's own (its collectives' messages): a user's send with
/// it is a typed error naming the range, never a message a collective could take. On
/// shm every `u32` is a tag.
#[dist_runtime::test(ranks = [1, 2])]
fn the_mpi_backend_keeps_one_tag_for_its_collectives(world: Comm<World>) {
    const TOP: Tag<u8> = Tag::new(i32::MAX as u32);
    let me = world.rank();
    if world.backend() == "mpi" {
        let e = world.isend(me, TOP, &[1u8]).map(|_| ()).unwrap_err().to_string();
        assert!(e.contains("dist's own collective messages") && e.contains("MPI_TAG_UB"), "{e}");
    } else {
        let mut got = [0u8];
        world.sendrecv(me, TOP, &[9u8], me, &mut got).unwrap();
        assert_eq!(got, [9]);
    }
    // Collectives around it are unaffected.
    let mut v = [me as u32 + 1];
    world.all_reduce(&mut v, ReduceOp::Sum).unwrap();
    assert_eq!(v[0] as usize, (1..=world.size()).sum::<usize>());
}

/// With checks on (the shm backend's rendezvous mode), a blocking send returns once its
/// own receive is posted: each tag's messages are counted on their own, tag 0 included,
/// whatever went before on other tags; and not before (the last send waits for a receive
/// its peer posts 300 ms later).
#[dist_runtime::test(ranks = [2])]
fn blocking_sends_wait_for_their_own_receive_on_every_tag(world: Comm<World>) {
    if world.backend() != "shm" {
        return; // the shm backend's rendezvous mode
    }
    const T0: Tag<u32> = Tag::new(0);
    const T1: Tag<u32> = Tag::new(1);
    const T2: Tag<u32> = Tag::new(2);
    let order = [(T1, 1u32), (T0, 2), (T2, 3), (T0, 4), (T1, 5), (T0, 6)];
    if world.rank() == 0 {
        for (tag, v) in order {
            world.send(1, tag, &[v]).unwrap();
        }
        let t = std::time::Instant::now();
        world.send(1, T2, &[7]).unwrap();
        assert!(t.elapsed() >= std::time::Duration::from_millis(250), "returned after {:?}", t.elapsed());
    } else {
        for (tag, v) in order {
            let mut got = [0u32];
            world.recv(0, tag, &mut got).unwrap();
            assert_eq!(got, [v]);
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
        let mut got = [0u32];
        world.recv(0, T2, &mut got).unwrap();
        assert_eq!(got, [7]);
    }
}

const PARTWAY: Tag<u8> = Tag::new(33);
const AFTER: Tag<u8> = Tag::new(34);

/// A blocking send of 3 MiB (past the ring) whose receiver is busy past the sender's
/// deadline: the send fails with the deadline, partway or with its offer untaken, and
/// the caller may reuse its buffer at once (it is zeroed here); what is left of the
/// message follows from a copy, so the receiver, once it receives, gets it whole, and
/// the next message after it.
#[spmd(unchecked)]
fn send_times_out_partway(world: Comm<World>) -> Result<(), String> {
    let len = 3 << 20;
    if world.rank() == 0 {
        world.set_timeout(std::time::Duration::from_millis(500)).map_err(|e| e.to_string())?;
        let mut big = data::<u8>(0, len, 1);
        match world.send(1, PARTWAY, &big) {
            Err(dist_runtime::Error::Timeout { .. }) => {}
            other => return Err(format!("expected the deadline, got {other:?}")),
        }
        big.fill(0);
        world.set_timeout(std::time::Duration::from_secs(60)).map_err(|e| e.to_string())?;
        world.send(1, AFTER, &[7u8; 5]).map_err(|e| e.to_string())
    } else {
        std::thread::sleep(std::time::Duration::from_millis(1500));
        let mut got = vec![0u8; len];
        world.recv(0, PARTWAY, &mut got).map_err(|e| e.to_string())?;
        if got != data::<u8>(0, len, 1) {
            return Err("the message of the send that timed out arrived changed".into());
        }
        let mut next = [0u8; 5];
        world.recv(0, AFTER, &mut next).map_err(|e| e.to_string())?;
        if next != [7u8; 5] {
            return Err(format!("the next message arrived as {next:?}"));
        }
        Ok(())
    }
}

#[test]
fn a_send_that_times_out_partway_leaves_the_stream_whole() {
    if std::env::var("DIST_BACKEND").is_ok_and(|b| b == "mpi") {
        println!("the shm backend's rings and offers");
        return;
    }
    // Streamed through the ring (single-copy off), and offered (on); sent partway, and
    // never sent at all.
    for entry in ["p2p::send_times_out_partway", "p2p::send_times_out_queued"] {
        for cma in ["0", "1"] {
            launch_each(entry, &[2], &[("DIST_CMA", cma)]);
        }
    }
}

const BACKLOG: Tag<u8> = Tag::new(35);

/// A blocking send queued behind more than the ring holds (isends its receiver has not
/// read), whose receiver is busy past the sender's deadline, fails with the deadline
/// before any of it reached the ring (an offer withdrawn after 40 µs included): it goes
/// unsent, the messages before it arrive whole, a retry on its tag is the tag's next
/// message (not one past it), and the stream carries on.
#[spmd(unchecked)]
fn send_times_out_queued(world: Comm<World>) -> Result<(), String> {
    let chunk = 100 << 10; // four of them: past the 256 KiB ring of 2 ranks
    let err = |e: dist_runtime::Error| e.to_string();
    if world.rank() == 0 {
        let backlog: Vec<Vec<u8>> = (0..4).map(|k| data::<u8>(0, chunk, 10 + k)).collect();
        let reqs = backlog
            .iter()
            .map(|m| world.isend(1, BACKLOG, m))
            .collect::<dist_runtime::Result<Vec<_>>>()
            .map_err(err)?;
        world.set_timeout(std::time::Duration::from_millis(500)).map_err(err)?;
        match world.send(1, PARTWAY, &data::<u8>(0, chunk, 20)) {
            Err(dist_runtime::Error::Timeout { .. }) => {}
            other => return Err(format!("expected the deadline, got {other:?}")),
        }
        world.set_timeout(std::time::Duration::from_secs(60)).map_err(err)?;
        world.send(1, PARTWAY, &[9u8; 3]).map_err(err)?;
        world.send(1, AFTER, &[7u8; 5]).map_err(err)?;
        dist_runtime::wait_all(reqs).map_err(err)
    } else {
        std::thread::sleep(std::time::Duration::from_millis(1500));
        for k in 0..4 {
            let mut got = vec![0u8; chunk];
            world.recv(0, BACKLOG, &mut got).map_err(err)?;
            if got != data::<u8>(0, chunk, 10 + k) {
                return Err(format!("backlog message {k} arrived changed"));
            }
        }
        let mut retry = [0u8; 3];
        world.recv(0, PARTWAY, &mut retry).map_err(err)?;
        let mut next = [0u8; 5];
        world.recv(0, AFTER, &mut next).map_err(err)?;
        if (retry, next) != ([9u8; 3], [7u8; 5]) {
            return Err(format!("after the failed send: {retry:?}, {next:?}"));
        }
        Ok(())
    }
}

const FAR: Tag<u8> = Tag::new(36);

/// MPI's progress rule: an `isend` larger than the ring, then a collective on the sender,
/// against a blocking `recv` then the collective on the receiver, completes: the
/// sender's wait in the collective keeps moving its queued bytes.
#[dist_runtime::test(ranks = [2, 3])]
fn an_isend_progresses_while_its_sender_waits_in_a_collective(world: Comm<World>) {
    let (r, n) = (world.rank(), world.size());
    let len = 3 << 20; // past any ring
    if r == 0 {
        let msgs: Vec<Vec<u8>> = (1..n).map(|j| data::<u8>(0, len, j as u64)).collect();
        let reqs: Vec<_> = msgs.iter().enumerate().map(|(k, m)| world.isend(k + 1, FAR, m).unwrap()).collect();
        world.barrier().unwrap();
        let mut x = [1u32];
        world.all_reduce(&mut x, ReduceOp::Sum).unwrap();
        dist_runtime::wait_all(reqs).unwrap();
    } else {
        let mut got = vec![0u8; len];
        world.recv(0, FAR, &mut got).unwrap();
        assert_same("the isend's message", &got, &data::<u8>(0, len, r as u64));
        world.barrier().unwrap();
        let mut x = [1u32];
        world.all_reduce(&mut x, ReduceOp::Sum).unwrap();
    }
}

const LINES: Tag<u8> = Tag::new(32);

/// Message sizes around the ring's layout (a message takes whole 64-byte lines; up to
/// 24 payload bytes share the header's line) and around the ring's size at 16 ranks
/// (64 KiB): every size lands intact, whether it goes whole, as a header and pieces, or
/// read from the sender's memory.
const AROUND_LINES: [usize; 20] =
    [0, 1, 23, 24, 25, 63, 64, 65, 87, 88, 89, 4095, 4096, 60_000, 65_495, 65_496, 65_536, 65_537, 131_072, 200_001];

/// Each rank passes messages of every size in [`AROUND_LINES`] to the next (irecv, blocking
/// send, wait), then a burst of 1500 small ones of odd sizes that nobody receives yet (so
/// they wait in the receiver's stash, or in its ring while the sender copies the rest),
/// received after the burst: the ring wraps many times with messages straddling its end.
#[spmd]
fn ring_layout_sizes(world: Comm<World>) -> dist_runtime::Result<()> {
    let (r, n) = (world.rank(), world.size());
    let (next, prev) = ((r + 1) % n, (r + n - 1) % n);
    for (k, &len) in AROUND_LINES.iter().enumerate() {
        let mut got = vec![0u8; len];
        let req = world.irecv(prev, LINES, &mut got)?;
        world.send(next, LINES, &data::<u8>(r, len, k as u64))?;
        req.wait()?;
        assert_same(&format!("{len} bytes"), &got, &data::<u8>(prev, len, k as u64));
    }
    let burst: Vec<Vec<u8>> = (0..1500).map(|k| data::<u8>(r, (k * 37) % 300, 1000 + k as u64)).collect();
    let sends = burst.iter().map(|m| world.isend(next, LINES, m)).collect::<dist_runtime::Result<Vec<_>>>()?;
    for k in 0..1500 {
        let mut got = vec![0u8; (k * 37) % 300];
        world.recv(prev, LINES, &mut got)?;
        assert_same(&format!("burst message {k}"), &got, &data::<u8>(prev, got.len(), 1000 + k as u64));
    }
    dist_runtime::wait_all(sends)?;
    Ok(())
}

#[test]
fn messages_of_every_size_around_the_ring_layout_land_intact() {
    // 16 ranks: the shm rings are 64 KiB there (MPI has no rings; 2 and 3 ranks suffice).
    let mpi = std::env::var("DIST_BACKEND").is_ok_and(|b| b == "mpi");
    let cases: &[(usize, &str)] =
        if mpi { &[(2, "1"), (3, "0")] } else { &[(2, "1"), (2, "0"), (3, "0"), (16, "0"), (16, "1")] };
    for &(n, cma) in cases {
        launch_each("p2p::ring_layout_sizes", &[n], &[("DIST_CMA", cma)]);
    }
}

const REFUSED: Tag<f32> = Tag::new(60);
const REFUSED_I: Tag<i32> = Tag::new(60);
const REFUSED_ACK: Tag<u8> = Tag::new(61);

/// A receive that refuses its message (another length or element type) leaves the
/// stream whole: the next receives get the next messages intact, whether the refused
/// message was small or large, and whether the next one was already on its way. On MPI
/// a receive past the inline size posts its payload's receive before it has the header:
/// a refused small message must neither let it keep the next message's payload nor
/// lose that payload.
#[dist_runtime::test(ranks = [2])]
fn a_refused_message_leaves_the_next_ones_intact(world: Comm<World>) {
    let msg = |k: usize, n: usize| (0..n).map(|i| (k * 100_000 + i) as f32).collect::<Vec<f32>>();
    let big = 3000; // 12 KB: past MPI's inline 4 KiB
    if world.rank() == 0 {
        // Round 1: every message is on its way before rank 1 receives.
        let bufs: Vec<Vec<f32>> = [(1, 8), (2, big), (3, 5000), (4, big), (5, 4000), (6, big), (7, big), (8, big)]
            .map(|(k, n)| msg(k, n))
            .into();
        let reqs: Vec<_> = bufs.iter().map(|b| world.isend(1, REFUSED, b).unwrap()).collect();
        for r in reqs {
            r.wait().unwrap();
        }
        // Round 2: rank 1's receive waits first; the large message follows only after it
        // refused the small one.
        world.recv(1, REFUSED_ACK, &mut [0u8]).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(100));
        world.send(1, REFUSED, &msg(11, 8)).unwrap();
        world.recv(1, REFUSED_ACK, &mut [0u8]).unwrap();
        world.send(1, REFUSED, &msg(12, big)).unwrap();
    } else {
        std::thread::sleep(std::time::Duration::from_millis(200));
        let mut b = vec![0f32; big];
        let refused = |e: dist_runtime::Error, want: &str| {
            let e = e.to_string();
            assert!(e.contains(want) && e.contains("p2p.rs:"), "{e}");
        };
        // small message, large receive
        refused(world.recv(0, REFUSED, &mut b).unwrap_err(), "sent 8 × f32, 32 bytes");
        world.recv(0, REFUSED, &mut b).unwrap();
        assert_eq!(b, msg(2, big));
        // large message, small receive
        refused(world.recv(0, REFUSED, &mut [0f32; 100]).unwrap_err(), "sent 5000 × f32, 20000 bytes");
        world.recv(0, REFUSED, &mut b).unwrap();
        assert_eq!(b, msg(4, big));
        // large message, longer than the large receive
        refused(world.recv(0, REFUSED, &mut b).unwrap_err(), "sent 4000 × f32, 16000 bytes");
        world.recv(0, REFUSED, &mut b).unwrap();
        assert_eq!(b, msg(6, big));
        // the same length, another element type
        refused(world.recv(0, REFUSED_I, &mut vec![0i32; big]).unwrap_err(), "sent 3000 × f32, 12000 bytes");
        world.recv(0, REFUSED, &mut b).unwrap();
        assert_eq!(b, msg(8, big));
        // round 2
        world.send(0, REFUSED_ACK, &[1u8]).unwrap();
        refused(world.recv(0, REFUSED, &mut b).unwrap_err(), "sent 8 × f32, 32 bytes");
        world.send(0, REFUSED_ACK, &[1u8]).unwrap();
        world.recv(0, REFUSED, &mut b).unwrap();
        assert_eq!(b, msg(12, big));
    }
}

const MIXED: Tag<u32> = Tag::new(62);

/// A receive naming its source and a receive from any source, both posted on one tag and
/// served while this rank waits in a collective: the named one gets its source's first
/// message, the one from any source the next, and a later receive the third, none lost
/// (on MPI a wait used to hand a message taken for the receive from any source on to
/// the named receive, then probe again for it).
#[dist_runtime::test(ranks = [2, 3])]
fn named_and_any_source_receives_served_in_a_collective_keep_every_message(world: Comm<World>) {
    if world.rank() == 1 {
        let sent = [[1u32], [2], [3]];
        let reqs: Vec<_> = sent.iter().map(|m| world.isend(0, MIXED, m).unwrap()).collect();
        world.barrier().unwrap();
        for r in reqs {
            r.wait().unwrap();
        }
    } else if world.rank() == 0 {
        // Let every message arrive before the receives are posted.
        std::thread::sleep(std::time::Duration::from_millis(100));
        let (mut named, mut any, mut last) = ([0u32], [0u32], [0u32]);
        let rn = world.irecv(1, MIXED, &mut named).unwrap();
        let ra = world.irecv_any(MIXED, &mut any).unwrap();
        world.barrier().unwrap();
        let st = ra.wait().unwrap();
        rn.wait().unwrap();
        world.recv(1, MIXED, &mut last).unwrap();
        assert_eq!((named[0], any[0], last[0]), (1, 2, 3));
        assert_eq!((st.source, st.count), (1, 1));
    } else {
        world.barrier().unwrap();
    }
}
