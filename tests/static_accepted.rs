//! Programs the compile-time communication check accepts (it checks each at world sizes
//! 1..=8 when this file compiles), run for real at every one of those sizes. Each
//! computes something its ranks verify, so "accepted" also means "correct".
// Entries here exercise the run-time checks: what the compile-time check cannot follow
// in them is expected (its warnings are `deprecated` uses; docs/static-checks.md).
#![allow(deprecated)]

use dist_runtime::prelude::*;

dist_runtime::group!(Dp);
dist_runtime::group!(Tp);
dist_runtime::group!(Half);
dist_runtime::group!(Pp);
dist_runtime::group!(DpTp);

const T: Tag<i64> = Tag::new(1);
const ACT: Tag<f32> = Tag::new(2);
const GRAD: Tag<f32> = Tag::new(3);

/// The seed's deadlock, fixed by ordering: rank 0 sends then receives, rank 1 receives
/// then sends; the other ranks sit out.
#[spmd(strict)]
fn seed_reorder(world: Comm<World>) -> dist_runtime::Result<()> {
    if world.size() < 2 {
        return Ok(());
    }
    let r = world.rank();
    let mut got = [0i64; 4];
    if r == 0 {
        world.send(1, T, &[10; 4])?;
        world.recv(1, T, &mut got)?;
        assert_eq!(got, [11; 4]);
    } else if r == 1 {
        world.recv(0, T, &mut got)?;
        world.send(0, T, &[got[0] + 1; 4])?;
    }
    Ok(())
}

/// 0 → 1 → 2 → …: each rank adds its rank and passes the sum on.
#[spmd(strict)]
fn chain(world: Comm<World>) -> dist_runtime::Result<()> {
    let (r, n) = (world.rank(), world.size());
    let mut acc = [0i64];
    if r > 0 {
        world.recv(r - 1, T, &mut acc)?;
    }
    acc[0] += r as i64;
    if r + 1 < n {
        world.send(r + 1, T, &acc)?;
    } else {
        assert_eq!(acc[0], (n * (n - 1) / 2) as i64);
    }
    Ok(())
}

/// A ring shift with `sendrecv`: every rank sends right and receives from the left at once.
#[spmd(strict)]
fn ring_sendrecv(world: Comm<World>) -> dist_runtime::Result<()> {
    let (r, n) = (world.rank(), world.size());
    let mut got = [0i64; 3];
    world.sendrecv((r + 1) % n, T, &[r as i64; 3], (r + n - 1) % n, &mut got)?;
    assert_eq!(got, [((r + n - 1) % n) as i64; 3]);
    Ok(())
}

/// A ring with blocking sends, safe because even ranks send first and odd ranks
/// receive first (for an odd world the last even rank still finds its partner ready).
#[spmd(strict)]
fn ring_even_odd(world: Comm<World>) -> dist_runtime::Result<()> {
    let (r, n) = (world.rank(), world.size());
    if n == 1 {
        return Ok(());
    }
    let (right, left) = ((r + 1) % n, (r + n - 1) % n);
    let mut got = [0i64];
    if r % 2 == 0 {
        world.send(right, T, &[r as i64])?;
        world.recv(left, T, &mut got)?;
    } else {
        world.recv(left, T, &mut got)?;
        world.send(right, T, &[r as i64])?;
    }
    assert_eq!(got[0], left as i64);
    Ok(())
}

/// A 1-d halo exchange on a periodic domain: each rank owns 8 cells and swaps one ghost
/// cell with each neighbour, in a batch so that no order can deadlock.
#[spmd(strict)]
fn halo(world: Comm<World>) -> dist_runtime::Result<()> {
    let (r, n) = (world.rank(), world.size());
    let cells: Vec<f32> = (0..8).map(|i| (r * 8 + i) as f32).collect();
    let (right, left) = ((r + 1) % n, (r + n - 1) % n);
    let (mut from_left, mut from_right) = ([0.0f32], [0.0f32]);
    world.batch(|b| {
        b.send(right, ACT, &cells[7..]);
        b.send(left, GRAD, &cells[..1]);
        b.recv(left, ACT, &mut from_left);
        b.recv(right, GRAD, &mut from_right);
    })?;
    assert_eq!(from_left[0], (left * 8 + 7) as f32);
    assert_eq!(from_right[0], (right * 8) as f32);
    Ok(())
}

/// GPipe-style pipeline over microbatches: activations flow forward stage by stage,
/// gradients flow back; stage s adds s on the way forward, and the last stage turns
/// the activation into a gradient.
#[spmd(strict)]
fn pipeline(world: Comm<World>) -> dist_runtime::Result<()> {
    let (stage, stages) = (world.rank(), world.size());
    let microbatches = 4;
    let mut acts = vec![[0.0f32; 2]; microbatches];
    for (mb, act) in acts.iter_mut().enumerate() {
        if stage == 0 {
            *act = [mb as f32; 2];
        } else {
            world.recv(stage - 1, ACT, act)?;
        }
        act[0] += stage as f32;
        if stage + 1 < stages {
            world.send(stage + 1, ACT, act)?;
        }
    }
    let forward_sum = (stages * (stages - 1) / 2) as f32;
    for mb in (0..microbatches).rev() {
        let mut grad = [0.0f32; 2];
        if stage + 1 == stages {
            grad = [2.0 * acts[mb][0], 0.0];
        } else {
            world.recv(stage + 1, GRAD, &mut grad)?;
        }
        assert_eq!(grad[0], 2.0 * (mb as f32 + forward_sum));
        if stage > 0 {
            world.send(stage - 1, GRAD, &grad)?;
        }
    }
    Ok(())
}

/// Non-blocking p2p with work between post and wait; the wait is where it completes.
#[spmd(strict)]
fn isend_irecv(world: Comm<World>) -> dist_runtime::Result<()> {
    let (r, n) = (world.rank(), world.size());
    let out = [r as i64; 5];
    let mut inn = [0i64; 5];
    let s = world.isend((r + 1) % n, T, &out)?;
    let rq = world.irecv((r + n - 1) % n, T, &mut inn)?;
    let busy: i64 = (0..1000).sum();
    rq.wait()?;
    s.wait()?;
    assert_eq!(inn[0] + busy - busy, ((r + n - 1) % n) as i64);
    Ok(())
}

/// Collectives on derived communicators: halves by `subgroup`, a dp × tp mesh when the
/// size is even, and a `split` by parity; a helper defined inside is checked inline.
#[spmd(strict)]
fn subgroups(world: Comm<World>) -> dist_runtime::Result<()> {
    fn sum_ranks<G: dist_runtime::Group>(c: &Comm<G>) -> dist_runtime::Result<u64> {
        let mut x = [c.rank() as u64];
        c.all_reduce(&mut x, ReduceOp::Sum)?;
        Ok(x[0])
    }
    let (r, n) = (world.rank(), world.size());
    let first: Vec<usize> = (0..n.div_ceil(2)).collect();
    let second: Vec<usize> = (n.div_ceil(2)..n).collect();
    let a = world.subgroup::<Half>(&first)?;
    if let Some(h) = &a {
        let k = h.size() as u64;
        assert_eq!(sum_ranks(h)?, k * (k - 1) / 2);
    }
    if !second.is_empty() {
        if let Some(h) = world.subgroup::<Half>(&second)? {
            let mut x = [1u32];
            h.all_reduce(&mut x, ReduceOp::Sum)?;
            assert_eq!(x[0] as usize, second.len());
        }
    }
    if n % 2 == 0 {
        let (dp, tp) = world.mesh2::<Dp, Tp>(n / 2, 2)?;
        let mut w = [r as f32];
        tp.broadcast(&mut w, 0)?;
        assert_eq!(w[0], (r - r % 2) as f32);
        let mut g = [1.0f32];
        dp.all_reduce(&mut g, ReduceOp::Sum)?;
        assert_eq!(g[0], (n / 2) as f32);
        if tp.rank() == 0 {
            tp.send(1, ACT, &[r as f32])?;
        } else {
            let mut got = [0.0f32];
            tp.recv(0, ACT, &mut got)?;
            assert_eq!(got[0], (r - 1) as f32);
        }
    }
    let parity = world.split::<Half>((r % 2) as u32, r as i64)?;
    let mut m = [r as i64];
    parity.all_reduce(&mut m, ReduceOp::Max)?;
    let top = if (n - 1) % 2 == r % 2 { n - 1 } else { n - 2 };
    assert_eq!(m[0], top as i64);
    world.barrier()
}

/// A helper outside the entry point: the check reads it from this file and follows it
/// at each call, so the exchange below is checked like inline code.
fn shift<G: dist_runtime::Group>(c: &Comm<G>, by: usize, out: &[i64], inn: &mut [i64]) -> dist_runtime::Result<()> {
    let (r, n) = (c.rank(), c.size());
    c.sendrecv((r + by) % n, T, out, (r + n - by % n) % n, inn)
}

/// Shifts by 1 and by 2 through the helper, then checks with a collective.
#[spmd(strict)]
fn file_helper(world: Comm<World>) -> dist_runtime::Result<()> {
    let (r, n) = (world.rank(), world.size());
    let mut a = [0i64];
    shift(&world, 1, &[r as i64], &mut a)?;
    let mut b = [0i64];
    shift(&world, 2, &a, &mut b)?;
    assert_eq!(b[0] as usize, (r + 3 * n - 3) % n);
    let mut total = [b[0]];
    world.all_reduce(&mut total, ReduceOp::Sum)?;
    assert_eq!(total[0] as usize, n * (n - 1) / 2);
    Ok(())
}

/// A Megatron-style port: the tensor-parallel group is kept as a clone, and the root of
/// its broadcast is named by world rank (torch's `src=`), translated with
/// `group_rank_of`; the last world rank of each group is its source.
#[spmd(strict)]
fn broadcast_by_world_rank(world: Comm<World>) -> dist_runtime::Result<()> {
    let n = world.size();
    let tp_size = if n.is_multiple_of(2) { 2 } else { 1 };
    let (_dp, tp): (Comm<Dp>, Comm<Tp>) = world.mesh2(n / tp_size, tp_size)?;
    let layer_tp = tp.clone();
    let src_world = layer_tp.world_rank_of(layer_tp.size() - 1)?;
    let root = layer_tp.group_rank_of(src_world)?;
    let mut w = [if world.world_rank() == src_world { src_world as i64 } else { -1 }];
    layer_tp.broadcast(&mut w, root)?;
    assert_eq!(w[0] as usize, src_world);
    assert_eq!(tp.world_rank(), world.rank());
    Ok(())
}

/// The check numbers a `subgroup` as the runtime does (by rank, torch's `new_group`) and
/// a `subgroup_ordered` by the list. The branches go by world rank, so each exchange is
/// right only under its own numbering (the asserts would fail under the other one).
#[spmd(strict)]
fn subgroup_numbering(world: Comm<World>) -> dist_runtime::Result<()> {
    if world.size() < 2 {
        return Ok(());
    }
    let r = world.rank();
    let mut got = [0i64];
    // By rank: world 0 is the pair's rank 0 and sends to its rank 1 (world 1).
    if let Some(p) = world.subgroup::<Half>(&[1, 0])? {
        if r == 0 {
            p.send(1, T, &[10])?;
        } else {
            p.recv(0, T, &mut got)?;
            assert_eq!(got[0], 10);
        }
    }
    // By the list: world 1 is the pair's rank 0 and sends to its rank 1 (world 0).
    if let Some(p) = world.subgroup_ordered::<Tp>(&[1, 0])? {
        if r == 1 {
            p.send(1, T, &[11])?;
        } else {
            p.recv(0, T, &mut got)?;
            assert_eq!(got[0], 11);
        }
    }
    Ok(())
}

const NOTE: Tag<String> = Tag::new(4);

/// The vocabulary of issue 18 under the check: a 3-D mesh and a flattened group,
/// scan/exscan, scatter_v/reduce_scatter_v, non-blocking collectives waited together,
/// object p2p between pipeline stages and scatter_object.
#[spmd(strict)]
fn vocabulary(world: Comm<World>) -> dist_runtime::Result<()> {
    let (n, r) = (world.size(), world.rank());
    let tp = if n % 2 == 0 { 2 } else { 1 };
    let pp = if n % 4 == 0 { 2 } else { 1 };
    let dims = [pp, n / (pp * tp), tp];
    let (p, d, t) = world.mesh::<(Pp, Dp, Tp)>(dims)?;
    let dt = world.mesh_group::<DpTp>(&dims, &[1, 2])?;
    let mut x = [r as i64];
    t.all_reduce(&mut x, ReduceOp::Sum)?;
    let mut s = [1i64];
    dt.scan(&mut s, ReduceOp::Sum)?;
    assert_eq!(s[0], dt.rank() as i64 + 1);
    let mut e = [2i64];
    world.exscan(&mut e, ReduceOp::Sum)?;
    assert_eq!(e[0], 2 * r as i64);
    let counts: Vec<usize> = (0..n).map(|j| j % 3).collect();
    let all: Vec<i64> = (0..counts.iter().sum::<usize>() as i64).collect();
    let mut mine = vec![0i64; r % 3];
    world.scatter_v(if r == 0 { Some(&all[..]) } else { None }, &mut mine, &counts, 0)?;
    let mut red = vec![0i64; r % 3];
    world.reduce_scatter_v(&all, &mut red, &counts, ReduceOp::Sum)?;
    let shard = [r as i64; 2];
    let mut gathered = vec![0i64; 2 * d.size()];
    let mut bucket = vec![1i64; 2 * t.size()];
    let mut reduced = [0i64; 2];
    let reqs = vec![
        world.barrier_async()?,
        d.all_gather_async(&shard, &mut gathered)?,
        t.reduce_scatter_async(&bucket, &mut reduced, ReduceOp::Sum)?,
    ];
    dist_runtime::wait_all(reqs)?;
    assert_eq!(reduced, [t.size() as i64; 2]);
    bucket[0] = 0;
    if pp == 2 {
        if p.rank() == 0 {
            p.send_object(1, NOTE, &format!("from {r}"))?;
        } else {
            let note: String = p.recv_object(0, NOTE)?;
            assert!(note.starts_with("from "));
        }
    }
    // A halo exchange as one non-blocking batch.
    let edge = [r as i64; 2];
    let mut halo = [0i64; 2];
    let req = world.batch_async(|b| {
        b.recv((r + n - 1) % n, T, &mut halo);
        b.send((r + 1) % n, T, &edge);
    })?;
    req.wait()?;
    assert_eq!(halo, [((r + n - 1) % n) as i64; 2]);
    let plan: Vec<u64> = (0..n as u64).map(|j| 10 * j).collect();
    let got: u64 = world.scatter_object(if r == n - 1 { Some(&plan[..]) } else { None }, n - 1)?;
    assert_eq!(got, 10 * r as u64);
    Ok(())
}

fn each_size(f: fn(Comm<World>) -> dist_runtime::Result<()>) {
    for n in 1..=8 {
        dist_runtime::launch(n, f).unwrap_or_else(|e| panic!("at {n} ranks: {e}"));
    }
}

#[test]
fn seed_reorder_runs() {
    each_size(seed_reorder);
}

#[test]
fn chain_runs() {
    each_size(chain);
}

#[test]
fn ring_sendrecv_runs() {
    each_size(ring_sendrecv);
}

#[test]
fn ring_even_odd_runs() {
    each_size(ring_even_odd);
}

#[test]
fn halo_runs() {
    each_size(halo);
}

#[test]
fn pipeline_runs() {
    each_size(pipeline);
}

#[test]
fn isend_irecv_runs() {
    each_size(isend_irecv);
}

#[test]
fn subgroups_run() {
    each_size(subgroups);
}

#[test]
fn file_helper_runs() {
    each_size(file_helper);
}

#[test]
fn broadcast_by_world_rank_runs() {
    each_size(broadcast_by_world_rank);
}

#[test]
fn subgroup_numbering_runs() {
    each_size(subgroup_numbering);
}

const ASK: Tag<u32> = Tag::new(5);

/// Receives from any source the check can follow: in each pair only the partner sends
/// to the even rank, so its `recv_any` is a receive from that rank, and the reply to
/// `status.source` is followed too (strict: nothing is left to run time).
#[spmd(strict)]
fn any_source_pairs(world: Comm<World>) -> dist_runtime::Result<()> {
    let (n, r) = (world.size(), world.rank());
    if r % 2 == 0 && r + 1 < n {
        let mut q = [0u32; 2];
        let st = world.recv_any(ASK, &mut q)?;
        assert_eq!((st.source, st.count, q[0]), (r + 1, 1, r as u32 + 1));
        world.send(st.source, ASK, &[q[0] * 10])?;
        let mut more = [0u32];
        let req = world.irecv_any(ASK, &mut more)?;
        let st = req.wait()?;
        assert_eq!(st.source, r + 1);
        world.send(st.source, ASK, &more)?;
    } else if r % 2 == 1 {
        world.send(r - 1, ASK, &[r as u32])?;
        let mut a = [0u32];
        world.recv(r - 1, ASK, &mut a)?;
        assert_eq!(a[0], 10 * r as u32);
        world.send(r - 1, ASK, &[7])?;
        world.recv(r - 1, ASK, &mut a)?;
        assert_eq!(a[0], 7);
    }
    Ok(())
}

/// World ranks translated explicitly before a `Comm<Tp>` takes them (and back): the
/// check follows each value's numbering and accepts the translated ones.
#[spmd(strict)]
fn translated_ranks(world: Comm<World>) -> dist_runtime::Result<()> {
    let n = world.size();
    let tp_size = if n.is_multiple_of(2) { 2 } else { 1 };
    let (_dp, tp) = world.mesh2::<Dp, Tp>(n / tp_size, tp_size)?;
    let first = tp.members()[0]; // a world rank, as torch's tp_ranks[0]
    let mut w = [world.rank() as u64];
    tp.broadcast(&mut w, tp.group_rank_of(first)?)?;
    assert_eq!(w[0], first as u64);
    let last = tp.world_rank_of(tp.size() - 1)?; // a world rank
    let mut v = [0u64];
    if world.rank() == last {
        v[0] = last as u64;
    }
    tp.broadcast(&mut v, tp.group_rank_of(last)?)?;
    assert_eq!(v[0], last as u64);
    let top = world.world_rank_of(n - 1)?; // the world's own numbering
    world.broadcast(&mut v, top)?;
    Ok(())
}

#[test]
fn translated_ranks_runs() {
    each_size(translated_ranks);
}

/// Communicators kept in a struct built by a constructor, methods on it, requests in a
/// `Vec` waited together, an `Option<Comm>` from `subgroup`: followed under `strict`.
struct ParallelState {
    dp: Comm<Dp>,
    tp: Comm<Tp>,
    lead: Option<Comm<Half>>,
}

impl ParallelState {
    fn new(world: &Comm<World>) -> dist_runtime::Result<ParallelState> {
        let n = world.size();
        let tp_size = if n.is_multiple_of(2) { 2 } else { 1 };
        let (dp, tp) = world.mesh2::<Dp, Tp>(n / tp_size, tp_size)?;
        let leads: Vec<usize> = (0..n).step_by(tp_size).collect();
        let lead = world.subgroup::<Half>(&leads)?;
        Ok(ParallelState { dp, tp, lead })
    }

    fn sync_grads(&self, grads: &mut [f32]) -> dist_runtime::Result<()> {
        self.tp.all_reduce(grads, ReduceOp::Sum)?;
        self.dp.all_reduce(grads, ReduceOp::Avg)
    }
}

struct Trainer {
    ps: ParallelState,
    steps: usize,
}

impl Trainer {
    fn step(&mut self, rank: usize) -> dist_runtime::Result<f32> {
        let mut g = vec![rank as f32; 4];
        self.ps.sync_grads(&mut g)?;
        if let Some(lead) = &self.ps.lead {
            let mut x = [1u32];
            lead.all_reduce(&mut x, ReduceOp::Sum)?;
            assert_eq!(x[0] as usize, lead.size());
        }
        self.steps += 1;
        Ok(g[0])
    }
}

const HALO: Tag<u32> = Tag::new(6);

#[spmd(strict)]
fn structs_and_request_lists(world: Comm<World>) -> dist_runtime::Result<()> {
    let (r, n) = (world.rank(), world.size());
    let mut t = Trainer { ps: ParallelState::new(&world)?, steps: 0 };
    for _ in 0..3 {
        t.step(r)?;
    }
    assert_eq!(t.steps, 3);
    // Requests collected in a Vec, waited together.
    let mine = [r as u32];
    let mut got = [[0u32]; 2];
    {
        let mut reqs = Vec::new();
        let (a, b) = got.split_at_mut(1);
        reqs.push(world.isend((r + 1) % n, HALO, &mine)?);
        reqs.push(world.isend((r + n - 1) % n, HALO, &mine)?);
        reqs.push(world.irecv((r + n - 1) % n, HALO, &mut a[0])?);
        reqs.push(world.irecv((r + 1) % n, HALO, &mut b[0])?);
        dist_runtime::wait_all(reqs)?;
    }
    assert_eq!(got[0][0] as usize, (r + n - 1) % n);
    Ok(())
}

#[test]
fn structs_and_request_lists_runs() {
    each_size(structs_and_request_lists);
}

#[test]
fn any_source_pairs_runs() {
    each_size(any_source_pairs);
}

#[test]
fn vocabulary_runs() {
    each_size(vocabulary);
}

/// A step count from the environment (`STEPS`, the same on every rank): the check
/// follows the loop for 1, 2 and 3 steps; each step passes a value down the chain and
/// all-reduces it, and the ranks verify both against a serial reference.
#[spmd(strict)]
fn steps_from_the_environment(world: Comm<World>) -> dist_runtime::Result<()> {
    let steps: usize = std::env::var("STEPS").ok().and_then(|s| s.parse().ok()).unwrap_or(2);
    let (r, n) = (world.rank(), world.size());
    let mut total = 0i64;
    for step in 0..steps {
        let mut x = [step as i64];
        if r > 0 {
            world.recv(r - 1, T, &mut x)?;
        }
        x[0] += r as i64;
        if r + 1 < n {
            world.send(r + 1, T, &x)?;
        }
        world.all_reduce(&mut x, ReduceOp::Max)?;
        // The last rank holds step + 0 + 1 + … + (n − 1), the largest value.
        assert_eq!(x[0], step as i64 + (n * (n - 1) / 2) as i64);
        total += x[0];
    }
    let want: i64 = (0..steps).map(|s| s as i64 + (n * (n - 1) / 2) as i64).sum();
    assert_eq!(total, want);
    Ok(())
}

#[test]
fn steps_from_the_environment_runs() {
    for n in [1, 2, 3, 5] {
        for steps in ["1", "4"] {
            let r = dist_runtime::Launch::entry("static_accepted::steps_from_the_environment", n)
                .unwrap()
                .env("STEPS", steps)
                .capture(true)
                .run()
                .unwrap();
            assert!(r.success(), "{n} ranks, {steps} steps: {}", r.summary());
        }
    }
}
