//! Bad input: every refusal is a typed error with a message that says what is wrong,
//! checked before any byte moves (so the communicator stays usable), or — for what
//! only the peers can see — an error on every rank naming both call sites.

use dist_runtime::prelude::*;
use dist_runtime::Error;

dist_runtime::group!(G);

#[track_caller]
fn invalid<T: std::fmt::Debug>(r: dist_runtime::Result<T>, needles: &[&str]) {
    match r {
        Err(e @ Error::InvalidArgument { .. }) => {
            let msg = e.to_string();
            for n in needles {
                assert!(msg.contains(n), "message {msg:?} lacks {n:?}");
            }
            // the caller's line is named
            assert!(msg.contains("errors.rs:"), "no call site in {msg:?}");
        }
        other => panic!("expected InvalidArgument containing {needles:?}, got {other:?}"),
    }
}

#[dist_runtime::test(ranks = [1, 3])]
fn local_argument_checks(world: Comm<World>) {
    let (n, me) = (world.size(), world.rank());
    let mut v = vec![1i32; 4];
    invalid(world.broadcast(&mut v, n), &["root", "out of range"]);
    invalid(world.reduce(&mut v, ReduceOp::Sum, n + 5), &["root", "out of range"]);
    // Avg on integers is NCCL's: the sum divided by n, truncated.
    let mut a = [me as i32 * 3 + 1, -(me as i32) - 1];
    world.all_reduce(&mut a, ReduceOp::Avg).unwrap();
    let s: i32 = (0..n as i32).map(|q| q * 3 + 1).sum();
    let t: i32 = (0..n as i32).map(|q| -q - 1).sum();
    assert_eq!(a, [s / n as i32, t / n as i32]);
    invalid(world.all_reduce(&mut v, ReduceOp::PreMulSum(2.0)), &["PreMulSum", "i32"]);
    invalid(world.all_reduce(&mut [1.0f32], ReduceOp::PreMulSum(f64::NAN)), &["finite"]);
    invalid(world.all_reduce(&mut [1.0f32], ReduceOp::BXor), &["BXor", "integer types only", "f32"]);
    let mut z = [dist_runtime::Complex::new(1.0f64, 2.0)];
    invalid(world.all_reduce(&mut z, ReduceOp::Max), &["Max", "needs an order", "Complex<f64>"]);
    invalid(world.all_reduce(&mut z, ReduceOp::BOr), &["BOr", "integer types only"]);
    // Complex products multiply as complex numbers: i·i·… over the ranks.
    let mut i = [dist_runtime::Complex::new(0.0f32, 1.0)];
    world.all_reduce(&mut i, ReduceOp::Prod).unwrap();
    let want = [dist_runtime::Complex::new(1.0f32, 0.0), dist_runtime::Complex::new(0.0, 1.0)];
    let k = [want[0], want[1], -want[0], -want[1]][n % 4];
    assert_eq!(i, [k]);
    // bool as torch: Sum/Max or, Prod/Min and; no Avg, no PreMulSum.
    let mut b = [me == 0, true, me > 0];
    world.all_reduce(&mut b, ReduceOp::Sum).unwrap();
    assert_eq!(b, [true, true, n > 1]);
    let mut b = [me == 0, true, me > 0];
    world.all_reduce(&mut b, ReduceOp::Prod).unwrap();
    assert_eq!(b, [n == 1, true, false]);
    invalid(world.all_reduce(&mut b, ReduceOp::Avg), &["Avg", "not defined on bool"]);
    invalid(world.all_reduce(&mut b, ReduceOp::PreMulSum(0.5)), &["PreMulSum", "bool"]);
    invalid(world.set_timeout(std::time::Duration::ZERO), &["set_timeout", "more than zero"]);
    // What a rank sends itself must be what it receives from itself (at one rank the
    // copy panicked deep in the backend).
    let (sc, mut rc) = (vec![1usize; n], vec![1usize; n]);
    rc[me] = 2;
    invalid(world.all_to_all_v(&vec![0i32; n], &sc, &mut vec![0i32; n + 1], &rc), &["send_counts[", "must be equal"]);
    invalid(world.reduce_scatter(&[1.0f64; 8], &mut [0.0f64; 0], ReduceOp::BAnd), &["BAnd", "integer"]);
    let mut out = vec![0i32; n * 4 + 1];
    invalid(world.all_gather(&v, &mut out), &["recv has", "size() × send.len()"]);
    invalid(world.all_gather_v(&v, &mut out, &[4]), &[]); // wrong counts length or wrong recv
    invalid(world.reduce_scatter(&v, &mut [0i32; 3], ReduceOp::Sum), &["send has 4 elements"]);
    if n > 1 {
        invalid(world.all_to_all(&[1i32; 1], &mut [0i32; 1]), &["not a multiple"]);
    }
    invalid(world.all_to_all_v(&v, &vec![1; n + 1], &mut [], &vec![0; n]), &["counts has"]);
    // gather/scatter: root passes the buffer, everyone else None
    if me == 0 {
        invalid(world.gather(&v, None, 0), &["root 0 must pass Some"]);
        invalid(world.scatter(None, &mut v, 0), &["must pass Some(send)"]);
        invalid(world.scatter(Some(&[1i32; 3][..]), &mut v, 0), &["send has 3 elements"]);
    } else {
        invalid(world.gather(&v, Some(&mut out), 0), &["is not the root", "must pass None"]);
        invalid(world.scatter(Some(&v[..]), &mut v.clone(), 0), &["is not the root"]);
        invalid(world.broadcast_object(Some(1u8), 0), &["must pass None"]);
    }
    // p2p peers
    invalid(world.send(n, Tag::<i32>::new(1), &v), &["destination", "out of range"]);
    invalid(world.recv(n + 1, Tag::<i32>::new(1), &mut v), &["source", "out of range"]);
    // groups
    invalid(world.subgroup::<G>(&[]), &["empty"]);
    invalid(world.subgroup::<G>(&[0, 0]), &["appears twice"]);
    invalid(world.subgroup::<G>(&[n]), &["out of range"]);
    invalid(world.mesh2::<G, G>(2, n), &["needs"]);
    // nothing moved: the communicator still works
    let mut s = [1u64];
    world.all_reduce(&mut s, ReduceOp::Sum).unwrap();
    assert_eq!(s[0], n as u64);
}

#[dist_runtime::test(ranks = [2, 3])]
fn mismatched_collectives_name_both_call_sites(world: Comm<World>) {
    let mut v = [1.0f32; 8];
    let (err, mine) = if world.rank() == 0 {
        (world.all_reduce(&mut v, ReduceOp::Sum).unwrap_err(), line!())
    } else {
        (world.broadcast(&mut v, 0).unwrap_err(), line!())
    };
    let msg = err.to_string();
    assert!(matches!(err, Error::Mismatch { .. }), "{msg}");
    assert!(msg.contains(&format!("errors.rs:{mine}")), "own site missing: {msg}");
    let other = if world.rank() == 0 { mine + 2 } else { mine - 2 };
    assert!(msg.contains(&format!("errors.rs:{other}")), "peer site missing: {msg}");
    assert!(msg.contains("all_reduce") && msg.contains("broadcast"), "{msg}");
}

#[dist_runtime::test(ranks = [2, 4])]
fn mismatched_lengths_and_ops_are_caught(world: Comm<World>) {
    let len = if world.rank() == 1 { 5 } else { 4 };
    let mut v = vec![1u32; len];
    let e = world.all_reduce(&mut v, ReduceOp::Sum).unwrap_err().to_string();
    assert!(e.contains("u32 × 4") && e.contains("u32 × 5"), "{e}");
    let op = if world.rank() == 0 { ReduceOp::Max } else { ReduceOp::Min };
    let e = world.all_reduce(&mut [1u32], op).unwrap_err();
    assert!(matches!(e, Error::Mismatch { .. }), "{e}");
    let root = if world.rank() == 0 { 0 } else { 1 };
    let e = world.broadcast(&mut [1u8], root).unwrap_err().to_string();
    assert!(e.contains("root=0") && e.contains("root=1"), "{e}");
    // A `PreMulSum` whose scale differs names both scales.
    let scale = if world.rank() == 0 { 0.5 } else { 0.25 };
    let e = world.all_reduce(&mut [1.0f64], ReduceOp::PreMulSum(scale)).unwrap_err();
    let msg = e.to_string();
    assert!(
        matches!(e, Error::Mismatch { .. }) && msg.contains("premulsum(0.5)") && msg.contains("premulsum(0.25)"),
        "{msg}"
    );
    // A `_v` collective is named as written.
    let counts: Vec<usize> = (0..world.size()).map(|r| r + usize::from(world.rank() == 1 && r == 0)).collect();
    let mine = vec![1i32; counts[world.rank()]];
    let mut all = vec![0i32; counts.iter().sum()];
    let got = if world.rank() == 0 { Some(&mut all[..]) } else { None };
    let msg = world.gather_v(&mine, got, &counts, 0).unwrap_err().to_string();
    assert!(msg.contains("gather_v(i32"), "{msg}");
}

/// The halves of a `sendrecv` are named `sendrecv` in its errors (the line holds no
/// `batch` or `recv` call).
#[dist_runtime::test(ranks = [2])]
fn sendrecv_errors_name_sendrecv(world: Comm<World>) {
    invalid(world.sendrecv(2, T, &[1.0], 0, &mut [0.0]), &["invalid argument to sendrecv", "out of range"]);
    if world.rank() == 0 {
        world.sendrecv(1, T, &[1.0; 4], 1, &mut [0.0; 4]).unwrap();
    } else {
        let e = world.sendrecv(0, T, &[2.0; 4], 0, &mut [0.0; 5]).unwrap_err().to_string();
        assert!(e.contains("invalid argument to sendrecv") && e.contains("receives 5 × f32"), "{e}");
    }
}

/// Ranks whose calls disagree across a backend's size thresholds (on MPI, small
/// collectives carry the check in their own messages and larger ones exchange records
/// first): every rank gets the mismatch naming both calls, whichever path it took.
#[dist_runtime::test(ranks = [2, 3, 4])]
fn mismatches_across_size_thresholds_are_caught(world: Comm<World>) {
    let big = world.rank() == 1;
    let len = if big { 3000 } else { 100 };
    let send = vec![1u32; len];
    let mut recv = vec![0u32; len * world.size()];
    let e = world.all_gather(&send, &mut recv).unwrap_err().to_string();
    assert!(e.contains("u32 × 100") && e.contains("u32 × 3000"), "{e}");
    let mut buf = vec![0u8; if big { 5000 } else { 8 }];
    let e = world.broadcast(&mut buf, 0).unwrap_err().to_string();
    assert!(e.contains("u8 × 8") && e.contains("u8 × 5000"), "{e}");
    // another collective altogether, both small
    let e = if big {
        world.all_reduce(&mut [1u64], ReduceOp::Sum).unwrap_err()
    } else {
        world.all_gather(&[1u64], &mut vec![0u64; world.size()]).unwrap_err()
    };
    assert!(matches!(e, Error::Mismatch { .. }) && e.to_string().contains("all_gather"), "{e}");
    // and the communicator still works after each
    let mut v = [world.rank() as u64];
    world.all_reduce(&mut v, ReduceOp::Sum).unwrap();
    assert_eq!(v[0], (0..world.size() as u64).sum::<u64>());
}

#[dist_runtime::test(ranks = [2, 3])]
fn all_to_all_v_count_disagreement_fails_everywhere(world: Comm<World>) {
    let n = world.size();
    let sc = vec![2usize; n];
    // rank 1 expects 3 from rank 0, which sends 2
    let mut rc = vec![2usize; n];
    if world.rank() == 1 {
        rc[0] = 3;
    }
    let send = vec![7u16; sc.iter().sum()];
    let mut recv = vec![0u16; rc.iter().sum()];
    // u16 is not an NCCL type: use u8 pairs instead
    let send: Vec<u8> = send.iter().flat_map(|x| x.to_le_bytes()).take(sc.iter().sum()).collect();
    let mut recv8: Vec<u8> = vec![0; rc.iter().sum()];
    let _ = &mut recv;
    let e = world.all_to_all_v(&send, &sc, &mut recv8, &rc).unwrap_err();
    assert!(matches!(e, Error::Mismatch { .. }), "{e}");
    if world.rank() == 1 {
        assert!(e.to_string().contains("rank 0 sends 2 bytes to rank 1, which expects 3"), "{e}");
    }
}

const T: Tag<f32> = Tag::new(3);
const TI: Tag<i32> = Tag::new(3);

#[dist_runtime::test(ranks = [2])]
fn recv_of_wrong_length_or_type_names_both_ends(world: Comm<World>) {
    if world.rank() == 0 {
        world.send(1, T, &[1.0; 4]).unwrap();
        world.send(1, T, &[1.0; 4]).unwrap();
    } else {
        let e = world.recv(0, T, &mut [0.0; 5]).unwrap_err().to_string();
        assert!(
            e.contains("receives 5 × f32") && e.contains("sent 4 × f32, 16 bytes") && e.contains("errors.rs:"),
            "{e}"
        );
        // same tag number, other element type
        let e = world.recv(0, TI, &mut [0; 4]).unwrap_err().to_string();
        assert!(e.contains("i32") && e.contains("f32"), "{e}");
    }
}

#[dist_runtime::test(ranks = [2, 3])]
fn arguments_that_must_agree_across_ranks(world: Comm<World>) {
    let n = world.size();
    // gather_v with counts that differ across ranks
    let mut counts = vec![1usize; n];
    if world.rank() == 1 {
        counts[0] = 1; // same length for rank 0's own block, but rank 1 claims a different layout
        counts[n - 1] = 2;
    }
    let send = vec![0u8; counts[world.rank()]];
    let mut recv = vec![0u8; counts.iter().sum()];
    let e = world.all_gather_v(&send, &mut recv, &counts).unwrap_err();
    assert!(matches!(e, Error::Mismatch { .. }), "{e}");
    // subgroup with member sets that differ across ranks
    let ranks: Vec<usize> = if world.rank() == 0 { vec![0, 1] } else { vec![0] };
    let e = world.subgroup::<G>(&ranks).unwrap_err();
    assert!(matches!(e, Error::Mismatch { .. }) && e.to_string().contains("communicator creation"), "{e}");
    // subgroup_ordered with orders that differ across ranks (a subgroup sorts both lists
    // into one group; an ordered one would number its members two ways)
    let ranks: Vec<usize> = if world.rank() == 0 { vec![0, 1] } else { vec![1, 0] };
    let e = world.subgroup_ordered::<G>(&ranks).unwrap_err();
    assert!(matches!(e, Error::Mismatch { .. }) && e.to_string().contains("communicator creation"), "{e}");
}

#[test]
fn nccl_without_the_feature_is_a_clear_error() {
    let env = dist_runtime::Env::from_lookup(|k| (k == "DIST_BACKEND").then(|| "nccl".to_string())).unwrap();
    let e = dist_runtime::init_with(env).unwrap_err().to_string();
    assert!(e.contains("no `nccl` feature") && e.contains("DIST_BACKEND=shm"), "{e}");
}

#[test]
fn a_port_in_use_is_named() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let vars = [("RANK", "0"), ("WORLD_SIZE", "2"), ("MASTER_PORT", port.as_str()), ("DIST_TIMEOUT", "1")];
    let env =
        dist_runtime::Env::from_lookup(|k| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())).unwrap();
    let e = dist_runtime::init_with(env).unwrap_err().to_string();
    assert!(e.contains("port is in use"), "{e}");
}

#[test]
fn world_sizes_out_of_range() {
    let e = dist_runtime::Launch::new("/bin/true", 0).run().unwrap_err().to_string();
    assert!(e.contains("cannot launch 0 ranks"), "{e}");
    let big = (dist_runtime::MAX_WORLD + 1).to_string();
    let vars = [("RANK", "0"), ("WORLD_SIZE", big.as_str()), ("MASTER_PORT", "1")];
    let e = dist_runtime::Env::from_lookup(|k| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string()))
        .unwrap_err()
        .to_string();
    assert!(e.contains("larger than this backend supports"), "{e}");
}

#[test]
fn a_stranger_cannot_join_the_store() {
    let srv = dist_runtime::store::StoreServer::bind("127.0.0.1:0", "the-token").unwrap();
    let addr = srv.addr().to_string();
    let e = dist_runtime::store::Store::connect(&addr, "guess", std::time::Duration::from_secs(2)).err().unwrap();
    assert!(e.to_string().contains("refused this job token"), "{e}");
}

/// The agreement check above the backend (`DIST_AGREEMENT=exchange`: what a backend
/// without shared memory gets) catches what the shm piggyback catches: the same
/// mismatch tests pass on that path, and the traces show the record exchange ran.
#[test]
fn the_generic_agreement_path_catches_the_same_mismatches() {
    let entries = [
        ("errors::mismatched_collectives_name_both_call_sites", 3),
        ("errors::mismatched_lengths_and_ops_are_caught", 4),
        ("errors::arguments_that_must_agree_across_ranks", 3),
    ];
    for (entry, n) in entries {
        let dir = std::env::temp_dir().join(format!("dist-agreement-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let report = dist_runtime::Launch::entry(entry, n)
            .unwrap()
            .env("DIST_AGREEMENT", "exchange")
            .env("DIST_DEBUG", "check")
            .env("DIST_TRACE", &dir)
            .capture(true)
            .timeout(std::time::Duration::from_secs(60))
            .run()
            .unwrap();
        assert!(report.success(), "{entry} on the exchange path:\n{}", report.summary());
        let trace = std::fs::read_to_string(dir.join("rank-0.jsonl")).unwrap();
        assert!(trace.contains(r#""agreement":true"#), "{entry}: no record exchange in the trace:\n{trace}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Op records keep the call site in place across the ops of one line and rewrite it
/// when the line changes: after many agreeing calls from one line, a mismatch still
/// names the lines the ranks are at now.
#[dist_runtime::test(ranks = [2, 3])]
fn a_mismatch_after_a_loop_names_the_current_lines(world: Comm<World>) {
    let mut v = [1u64; 4];
    for _ in 0..5 {
        world.all_reduce(&mut v, ReduceOp::Sum).unwrap();
    }
    let (err, mine) = if world.rank() == 0 {
        (world.all_reduce(&mut v[..3], ReduceOp::Sum).unwrap_err(), line!())
    } else {
        (world.all_reduce(&mut v, ReduceOp::Sum).unwrap_err(), line!())
    };
    let msg = err.to_string();
    let other = if world.rank() == 0 { mine + 2 } else { mine - 2 };
    assert!(msg.contains(&format!("errors.rs:{mine}")) && msg.contains(&format!("errors.rs:{other}")), "{msg}");
}

/// torch's `is_initialized` and `is_*_available`: inside a rank the world is alive; shm
/// is always available, and an unavailable backend says why.
#[dist_runtime::test(ranks = [2])]
fn setup_queries_answer_inside_a_rank(world: Comm<World>) {
    assert!(dist_runtime::is_initialized());
    assert!(dist_runtime::is_available(dist_runtime::BackendChoice::Shm));
    if let Err(e) = dist_runtime::backend_available(dist_runtime::BackendChoice::Nccl) {
        assert!(e.to_string().contains("nccl"), "{e}");
    }
    world.barrier().unwrap();
}
