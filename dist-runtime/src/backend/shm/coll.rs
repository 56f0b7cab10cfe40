//! Collective algorithms over the staging slots.
//!
//! Every algorithm is a sequence of *steps*. A step writes only into this rank's slot of
//! parity `(epoch + 1) % 2`, arrives at the next epoch and waits for all peers (`sync`),
//! and reads peers' slots of the parity just completed. The last step of an algorithm
//! only reads, so it needs no barrier: the next collective's first write goes to the
//! other parity, and its own barrier keeps a fast rank from coming round again before
//! every peer has finished reading. Large buffers are cut into chunks that fit a slot;
//! step t writes chunk t while reading chunk t−1, so copy-in and copy-out overlap: that
//! loop is [`pipeline`], which every algorithm but the reduce (a three-stage variant:
//! write, reduce, read back) runs.
//!
//! Reductions always combine contributions in rank order 0, 1, …, n−1, so every rank
//! gets bitwise the same result, on every path.

use super::single::{all_to_all_cma, broadcast_cma, gather_cma};
use super::slots::{from_shm, lock, parities, part, shm, shm_mut, to_shm, unit, whole};
use super::{cma, shared, ShmComm};
use crate::backend::reduce;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::op::Op;
use crate::reduce_op::ReduceOp;

/// Bytes before the data in a slot on the flat reduce path: the op's key, folded.
const FLAT_KEY: usize = 8;

/// Region of a slot given to each of n destinations (64-byte aligned).
fn region(c: &ShmComm) -> usize {
    region_of(c, 1)
}

/// [`region`] for items of `unit` bytes.
fn region_of(c: &ShmComm, unit: usize) -> usize {
    whole(c.seg.layout.slot / c.n, unit)
}

/// Offsets of blocks of `counts` bytes laid end to end.
fn displs(counts: &[usize]) -> Vec<usize> {
    counts
        .iter()
        .scan(0, |a, &x| {
            let d = *a;
            *a += x;
            Some(d)
        })
        .collect()
}

/// Writes chunk t (bytes `[t·reg, (t+1)·reg)`, cut at the block's end) of block j of
/// `send` (blocks of `counts` bytes at `displs`) into region j of this rank's slot of
/// parity `w`, for every j in `to`.
fn write_blocks(
    c: &ShmComm,
    w: u32,
    send: &[u8],
    (counts, displs, reg): (&[usize], &[usize], usize),
    t: usize,
    to: impl Iterator<Item = usize>,
) {
    for j in to {
        let (s, e) = (t * reg, counts[j].min((t + 1) * reg));
        if s < e {
            to_shm(c.slot(c.rank, w).wrapping_add(j * reg), &send[displs[j] + s..displs[j] + e]);
        }
    }
}

/// One step of a [`pipeline`]: write chunk `t` into this rank's slot of parity `w`, or
/// read chunk `t` from the slots of parity `r` (written in the step just completed).
enum Step {
    Write { t: usize, w: u32 },
    Read { t: usize, r: u32 },
}

/// The chunk pipeline every slot algorithm runs (README.md, invariant 1): `k` chunks
/// take `k + 1` steps; step t writes chunk t, then reads chunk t − 1, then arrives at
/// the barrier; the last step only reads. With `first` (the op's first barrier) the op
/// record is published and compared at step 0, and a zero-chunk op still takes that one
/// barrier, so a length mismatch is caught; without it (a later phase of an op) there
/// are exactly `k` barriers.
fn pipeline(c: &ShmComm, epoch: &mut u32, cx: &Op, first: bool, k: usize, step: impl FnMut(Step)) -> Result<()> {
    pipeline_w(c, epoch, cx, first, false, k, step).map(|_| ())
}

/// [`pipeline`] as the usual path of an op that may read allocated buffers in place
/// (`watch`, `shared.rs`): false when a peer published one at the first barrier, and
/// the op is to restart.
fn pipeline_w(
    c: &ShmComm,
    epoch: &mut u32,
    cx: &Op,
    first: bool,
    watch: bool,
    k: usize,
    mut step: impl FnMut(Step),
) -> Result<bool> {
    for t in 0..=k {
        let (w, r) = parities(*epoch);
        if t < k {
            step(Step::Write { t, w });
        }
        if t >= 1 {
            step(Step::Read { t: t - 1, r });
        }
        if t < k || (t == 0 && first) {
            c.sync(epoch, cx, first && t == 0)?;
            if watch && t == 0 && shared::published(c) {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

/// Runs an op's usual path, watching (`watch`) for peers' allocated buffers at its
/// first barrier; when they were seen, runs it once more from the start, unwatched (every
/// rank restarts alike: `shared.rs`).
fn restartable(epoch: &mut u32, watch: bool, mut usual: impl FnMut(&mut u32, bool) -> Result<bool>) -> Result<()> {
    if !usual(epoch, watch)? {
        usual(epoch, false)?;
    }
    Ok(())
}

/// Where `buf` lies if it is allocated and the op `eligible` to read it in place.
fn find(c: &ShmComm, eligible: bool, buf: &[u8]) -> Option<shared::Mine> {
    if eligible && shared::any(c) {
        shared::find(c, buf)
    } else {
        None
    }
}

/// [`in_place_start`] in an op: returns from the op with the in-place path's result
/// when it ran; otherwise evaluates to whether the usual path must watch.
macro_rules! in_place_or {
    ($($arg:expr),+ $(,)?) => {
        match in_place_start($($arg),+)? {
            Start::Done(r) => return r,
            Start::Usual { watch } => watch,
        }
    };
}

/// Whether a rank whose buffer is not allocated must watch for peers' at its first
/// barrier, or the in-place path ran: what [`in_place_start`] found.
enum Start {
    Done(Result<()>),
    Usual { watch: bool },
}

/// The start of an op that may read allocated buffers in place (`eligible`: by sizes
/// every rank agrees on; `mine`: where this rank's buffer is, if allocated, looked up
/// with [`find`]): a rank whose buffer is allocated publishes it and, if every
/// rank's is in the same allocation, runs `direct`; otherwise the usual path, watching
/// for peers' buffers at its first barrier when this rank's is not allocated.
fn in_place_start(
    c: &ShmComm,
    epoch: &mut u32,
    cx: &Op,
    eligible: bool,
    mine: Option<shared::Mine>,
    need: impl Fn(usize) -> usize,
    direct: impl FnOnce(&mut u32, &shared::Peers) -> Result<()>,
) -> Result<Start> {
    // No allocation ever made on this communicator (every rank knows the same count:
    // allocating is collective): nobody can publish, so nobody watches.
    if !eligible || !shared::any(c) {
        return Ok(Start::Usual { watch: false });
    }
    match mine {
        None => Ok(Start::Usual { watch: true }),
        Some(mine) => match shared::begin(c, epoch, cx, mine, need)? {
            Some(peers) => Ok(Start::Done(direct(epoch, &peers))),
            None => Ok(Start::Usual { watch: false }),
        },
    }
}

/// All-reduce (`root == None`) or reduce to `root`.
pub(super) fn reduce(
    c: &ShmComm,
    cx: &Op,
    buf: &mut [u8],
    dtype: DType,
    op: ReduceOp,
    root: Option<usize>,
) -> Result<()> {
    if c.n == 1 {
        reduce::finish(dtype, op, 1, buf);
        return Ok(());
    }
    let mut epoch = lock(c);
    let epoch = &mut *epoch;
    let b = buf.len();
    // The in-place all-reduce stands in for the pipelined path only (not the flat one
    // for small buffers, nor the ring): `Reduction::run` chooses by the same two tests,
    // and the ranks that do not publish watch only on that path.
    let eligible = root.is_none() && !rings(c, op) && !flat(c, b) && b >= shared::ALL_REDUCE_MIN;
    let mine = find(c, eligible, buf);
    let watch =
        in_place_or!(c, epoch, cx, eligible, mine, |_| b, |e, p| shared::all_reduce(c, e, cx, buf, dtype, op, p));
    let red = Reduction { c, cx, fp: true, watch, dtype, op, root };
    if !red.run(epoch, buf)? {
        Reduction { watch: false, ..red }.run(epoch, buf)?;
    }
    Ok(())
}

/// Whether an all-reduce with `op` takes the ring (`DIST_ALGO=ring`): the ring combines
/// in ring order, and a user reduction is promised rank order.
fn rings(c: &ShmComm, op: ReduceOp) -> bool {
    c.cfg.algo.ring && !matches!(op, ReduceOp::User(_))
}

/// Whether a reduction of `b` bytes takes the one-barrier flat path.
fn flat(c: &ShmComm, b: usize) -> bool {
    b <= c.cfg.algo.flat_max.min(c.seg.layout.slot - FLAT_KEY)
}

/// A reduce or all-reduce run with this rank's collective state held: on `c`, for the
/// op `cx`; `fp`: the op's first barrier compares its record; `watch`: see
/// [`pipeline_w`] (false: restart the op); `root`: `None` for an all-reduce.
#[derive(Clone, Copy)]
struct Reduction<'a> {
    c: &'a ShmComm,
    cx: &'a Op,
    fp: bool,
    watch: bool,
    dtype: DType,
    op: ReduceOp,
    root: Option<usize>,
}

impl Reduction<'_> {
    /// Runs it on `buf` by the path its size takes: the ring (`DIST_ALGO=ring`), the
    /// one-barrier flat path, the pipelined one, or the gathered one for wide items.
    /// `Ok(false)`: a watched run saw a peer publish in place (restart unwatched).
    fn run(&self, epoch: &mut u32, buf: &mut [u8]) -> Result<bool> {
        let Reduction { c, cx, fp, watch, dtype, op, root } = *self;
        if root.is_none() && rings(c, op) {
            return all_reduce_ring(c, epoch, cx, fp, buf, dtype, op).map(|_| true);
        }
        // At or below `flat_max` (16 KiB unless DIST_ALGO says otherwise), the one-barrier
        // flat path: every rank publishes its whole buffer and reduces all of them itself.
        if flat(c, buf.len()) {
            return self.flat(epoch, buf);
        }
        let reg = region_of(c, unit(dtype, op));
        if reg == 0 {
            return reduce_gathered(c, epoch, cx, fp, watch, buf, dtype, op, root);
        }
        self.pipelined(epoch, buf, reg)
    }

    fn gets_result(&self, r: usize) -> bool {
        self.root.is_none_or(|x| x == r)
    }

    /// The flat path: every rank's whole buffer in its slot, one barrier, each rank that
    /// gets the result folds all of them in rank order.
    fn flat(&self, epoch: &mut u32, buf: &mut [u8]) -> Result<bool> {
        let Reduction { c, cx, fp, dtype, op, .. } = *self;
        let (n, me, b) = (c.n, c.rank, buf.len());
        let (w, _) = parities(*epoch);
        // The slot holds the op's key folded to a word, then the data: the check rides
        // in the cache line peers fetch for the data anyway, instead of a record each
        // peer must fetch. The key sits at a fixed place, so ranks whose lengths differ
        // still compare each other's current key (never stale bytes past the data).
        let data = |i: usize, p: u32| c.slot(i, p).wrapping_add(FLAT_KEY);
        to_shm(data(me, w), buf);
        let inline = (fp && c.cfg.check).then(|| {
            let key = cx.key();
            c.write_fp_key(w, cx, &key);
            // With the epoch in it, a word left from an earlier op never passes for this one.
            let h = Op::fold_key(&key) ^ (epoch.wrapping_add(1) as u64).wrapping_mul(0xff51_afd7_ed55_8ccd);
            // SAFETY: our own slot of the write parity (see to_shm), 64-aligned, in bounds.
            unsafe { (c.slot(me, w) as *mut u64).write(h) };
            h
        });
        c.sync(epoch, cx, fp && inline.is_none())?;
        let (_, r) = parities(*epoch);
        if let Some(h) = inline {
            // SAFETY: peers' slots of the read parity (see from_shm), 64-aligned.
            let theirs = |i: usize| unsafe { (c.slot(i, r) as *const u64).read_volatile() };
            if (0..n).any(|i| i != me && theirs(i) != h) {
                c.check_fps(r, cx)?;
                return Err(Error::Mismatch {
                    comm: c.name.clone(),
                    msg: format!(
                        "rank {me} called {}, but not every rank started the same collective here",
                        cx.describe(cx.site.0.file(), cx.site.0.line())
                    ),
                });
            }
        }
        if self.gets_result(me) {
            from_shm(buf, data(0, r));
            for i in 1..n {
                reduce::reduce_into(dtype, op, buf, shm(data(i, r), b));
            }
            reduce::finish(dtype, op, n, buf);
        }
        Ok(true)
    }

    /// The pipelined path over regions of `reg` bytes of each slot.
    fn pipelined(&self, epoch: &mut u32, buf: &mut [u8], reg: usize) -> Result<bool> {
        let Reduction { c, cx, fp, watch, dtype, op, .. } = *self;
        let (n, me, b) = (c.n, c.rank, buf.len());
        // Reduce-scatter + all-gather through the slots, pipelined over chunks of n regions
        // of a slot (`region_of`), region j for part j. Step t: a rank writes the parts of
        // chunk t its peers reduce into their regions of its slot (never its own part, which
        // it reads from its buffer); reduces its own part of chunk t−1 from its buffer and the
        // peers' regions for it, in its buffer where the order allows (rank 0, and rank 1 for
        // an op that commutes: `reduce::commutes`) and otherwise in its own region, and
        // publishes the result there; copies its peers' results of chunk t−2 home. At 2 ranks
        // an all-reduce of S bytes costs each rank 4 S of reads and writes, where writing its
        // whole chunk and folding into a separate out-area cost 5.5 S (docs/performance.md).
        // Chunks and parts in whole items (one element, or a user reduction's item).
        let es = unit(dtype, op);
        let cin = reg * n;
        let k = b.div_ceil(cin);
        let chunk = |t: usize| (t * cin, b.min((t + 1) * cin));
        let in_place = self.gets_result(me) && (me == 0 || (me == 1 && reduce::commutes(dtype, op)));
        let at = |i: usize, p: u32, j: usize| c.slot(i, p).wrapping_add(j * reg);
        for t in 0..=k + 1 {
            let (w, r) = parities(*epoch);
            if t < k {
                let (s, e) = chunk(t);
                for j in (0..n).filter(|&j| j != me) {
                    let (ps, pe) = part(e - s, es, n, j);
                    to_shm(at(me, w, j), &buf[s + ps..s + pe]);
                }
            }
            if (1..=k).contains(&t) {
                let (s, e) = chunk(t - 1);
                let (ps, pe) = part(e - s, es, n, me);
                let (mine, len) = (s + ps..s + pe, pe - ps);
                // SAFETY (shm_mut): our own region of our write-parity slot, which no peer
                // reads before we arrive; we wrote no input there.
                let out = shm_mut(at(me, w, me), len);
                if in_place {
                    // The fold's last step writes the result to the buffer and the region at
                    // once (`fold_last`): 4 S of traffic at 2 ranks, where a fold and then a
                    // copy took 4.5 S.
                    debug_assert!(n >= 2, "n == 1 returns before the slots");
                    let acc = &mut buf[mine];
                    let last = if me == n - 1 { n - 2 } else { n - 1 };
                    for i in (0..n).filter(|&i| i != me && i != last) {
                        reduce::reduce_into(dtype, op, acc, shm(at(i, r, me), len));
                    }
                    reduce::fold_last(dtype, op, n, acc, shm(at(last, r, me), len), out);
                } else {
                    if me == 0 {
                        to_shm(out.as_mut_ptr(), &buf[mine.clone()]);
                    } else {
                        from_shm(out, at(0, r, me));
                    }
                    for i in 1..n {
                        let theirs = if i == me { &buf[mine.clone()] } else { shm(at(i, r, me), len) };
                        reduce::reduce_into(dtype, op, out, theirs);
                    }
                    reduce::finish(dtype, op, n, out);
                    if self.gets_result(me) {
                        super::copy::copy_slice(&mut buf[mine], out);
                    }
                }
            }
            if t >= 2 && self.gets_result(me) {
                let (s, e) = chunk(t - 2);
                for j in (0..n).filter(|&j| j != me) {
                    let (ps, pe) = part(e - s, es, n, j);
                    from_shm(&mut buf[s + ps..s + pe], at(j, r, j));
                }
            }
            if t <= k {
                c.sync(epoch, cx, fp && t == 0)?;
                if watch && t == 0 && shared::published(c) {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }
}

/// [`Reduction::run`] for items larger than a rank's share of a slot (a user reduction
/// of wide items: a share must hold whole items): every rank's buffer is copied through
/// the slots in byte chunks to the ranks that get the result, which fold all of them in
/// rank order on the heap. `size` times the traffic of the shared-out fold.
#[allow(clippy::too_many_arguments)]
fn reduce_gathered(
    c: &ShmComm,
    epoch: &mut u32,
    cx: &Op,
    fp: bool,
    watch: bool,
    buf: &mut [u8],
    dtype: DType,
    op: ReduceOp,
    root: Option<usize>,
) -> Result<bool> {
    let (n, me, b) = (c.n, c.rank, buf.len());
    let gets = root.is_none_or(|x| x == me);
    let cap = c.seg.layout.slot;
    let mut all = Gathered::new(if gets { n * b } else { 0 });
    let ran = pipeline_w(c, epoch, cx, fp, watch, b.div_ceil(cap), |step| {
        let chunk = |t: usize| (t * cap, b.min((t + 1) * cap));
        match step {
            Step::Write { t, w } => {
                let (s, e) = chunk(t);
                to_shm(c.slot(me, w), &buf[s..e]);
            }
            Step::Read { t, r } if gets => {
                let (s, e) = chunk(t);
                for j in 0..n {
                    from_shm(&mut all.bytes()[j * b + s..j * b + e], c.slot(j, r));
                }
            }
            Step::Read { .. } => {}
        }
    })?;
    if ran && gets {
        all.fold_into(buf, n, dtype, op);
    }
    Ok(ran)
}

/// Every rank's contribution of `m` bytes, end to end on the heap, aligned for every
/// element type (the reduction kernels need it): what the paths for wide items fold.
struct Gathered(Vec<u128>, usize);

impl Gathered {
    fn new(len: usize) -> Gathered {
        Gathered(vec![0u128; len.div_ceil(16)], len)
    }
    fn bytes(&mut self) -> &mut [u8] {
        &mut bytemuck::cast_slice_mut::<u128, u8>(&mut self.0)[..self.1]
    }
    /// `out` = the `n` contributions folded in rank order, then the op's post-step.
    fn fold_into(&mut self, out: &mut [u8], n: usize, dtype: DType, op: ReduceOp) {
        let m = out.len();
        let all = self.bytes();
        reduce::fold_in_order(dtype, op, out, (0..n).map(|j| &all[j * m..(j + 1) * m]));
    }
}

/// Ring all-reduce through the slots (`DIST_ALGO=ring`, for comparison with the
/// pipelined reduce-scatter + all-gather): per segment of n slot-sized parts, n−1 steps
/// pass a part to the right and reduce the one from the left, then n−1 steps pass the
/// reduced parts around. 2(n−1) barriers per segment instead of one per chunk, and each
/// part is combined in ring order, so float results equal the rank-order fold only up to
/// rounding (every rank still gets the same bits).
fn all_reduce_ring(
    c: &ShmComm,
    epoch: &mut u32,
    cx: &Op,
    fp: bool,
    buf: &mut [u8],
    dtype: DType,
    op: ReduceOp,
) -> Result<()> {
    let (n, me, es, b) = (c.n, c.rank, dtype.size(), buf.len());
    if b == 0 {
        // Still one barrier, so the fingerprint check sees a length mismatch.
        return c.sync(epoch, cx, fp);
    }
    let left = (me + n - 1) % n;
    let seg = (c.seg.layout.slot / es) * es * n;
    let mut first = fp;
    let mut s0 = 0;
    while s0 < b {
        let s1 = b.min(s0 + seg);
        let len = s1 - s0;
        let range = |j: usize| {
            let (x, y) = part(len, es, n, j);
            (s0 + x, s0 + y)
        };
        // Reduce-scatter: after n−1 steps this rank holds part (me + 1) % n reduced.
        for step in 0..n - 1 {
            let (w, _) = parities(*epoch);
            let (xs, xe) = range((me + n - step) % n);
            to_shm(c.slot(me, w), &buf[xs..xe]);
            c.sync(epoch, cx, first)?;
            first = false;
            let (_, r) = parities(*epoch);
            let (ys, ye) = range((me + 2 * n - step - 1) % n);
            reduce::reduce_into(dtype, op, &mut buf[ys..ye], shm(c.slot(left, r), ye - ys));
        }
        let (os, oe) = range((me + 1) % n);
        reduce::finish(dtype, op, n, &mut buf[os..oe]);
        // All-gather: pass the reduced parts around.
        for step in 0..n - 1 {
            let (w, _) = parities(*epoch);
            let (xs, xe) = range((me + 1 + n - step) % n);
            to_shm(c.slot(me, w), &buf[xs..xe]);
            c.sync(epoch, cx, false)?;
            let (_, r) = parities(*epoch);
            let (ys, ye) = range((me + n - step) % n);
            from_shm(&mut buf[ys..ye], c.slot(left, r));
        }
        s0 = s1;
    }
    Ok(())
}

/// Inclusive (rank r gets ranks 0..=r reduced) or exclusive (0..r; rank 0 the identity)
/// prefix reduction in place: every rank publishes each chunk in its slot, then folds the
/// slots of the ranks before it, in rank order.
pub(super) fn scan(c: &ShmComm, cx: &Op, buf: &mut [u8], dtype: DType, op: ReduceOp, exclusive: bool) -> Result<()> {
    let (n, me, b) = (c.n, c.rank, buf.len());
    let upto = if exclusive { me } else { me + 1 };
    let fold = |out: &mut [u8], r: u32| {
        if upto == 0 {
            reduce::identity(dtype, op, out);
            return;
        }
        if me != 0 {
            from_shm(out, c.slot(0, r));
        }
        for i in 1..upto {
            reduce::reduce_into(dtype, op, out, shm(c.slot(i, r), out.len()));
        }
        reduce::finish(dtype, op, upto, out);
    };
    if n == 1 {
        fold(buf, 0);
        return Ok(());
    }
    let mut epoch = lock(c);
    let epoch = &mut *epoch;
    let cap = whole(c.seg.layout.slot, unit(dtype, op));
    pipeline(c, epoch, cx, true, b.div_ceil(cap), |step| match step {
        Step::Write { t, w } => to_shm(c.slot(me, w), &buf[t * cap..b.min((t + 1) * cap)]),
        Step::Read { t, r } => fold(&mut buf[t * cap..b.min((t + 1) * cap)], r),
    })
}

pub(super) fn broadcast(c: &ShmComm, cx: &Op, buf: &mut [u8], root: usize) -> Result<()> {
    if c.n == 1 {
        return Ok(());
    }
    let mut epoch = lock(c);
    let epoch = &mut *epoch;
    let cap = c.seg.layout.slot;
    let b = buf.len();
    let me = c.rank;
    let single = cma::single(c, epoch, cx, cma::Kind::Broadcast, b, cma::broadcast_max(c.n))?;
    // At 2 ranks from 512 KiB the root's helping hand (`broadcast_cma`) beats reading
    // its allocated buffer in place, where one core copies; at 256 KiB in place is still
    // as fast (measured: docs/performance.md, "Small messages in one cache line, a
    // broadcast root that copies too, and the table with checks on").
    let helped = single && c.n == 2 && b >= 512 << 10;
    let eligible = b >= shared::MIN && (b <= shared::BROADCAST_MAX || c.oversubscribed) && !helped;
    let mine = find(c, eligible, buf);
    let watch = in_place_or!(c, epoch, cx, eligible, mine, |_| b, |e, p| shared::broadcast(c, e, cx, buf, root, p));
    let usual = |epoch: &mut u32, watch: bool| {
        if single {
            return broadcast_cma(c, epoch, cx, buf, root, watch);
        }
        pipeline_w(c, epoch, cx, true, watch, b.div_ceil(cap), |step| match step {
            Step::Write { t, w } if me == root => to_shm(c.slot(root, w), &buf[t * cap..b.min((t + 1) * cap)]),
            Step::Read { t, r } if me != root => from_shm(&mut buf[t * cap..b.min((t + 1) * cap)], c.slot(root, r)),
            _ => {}
        })
    };
    restartable(epoch, watch, usual)
}

/// Gather (to `root`) or all-gather (`root == None`) of `counts[j]` bytes from each rank j.
pub(super) fn gather_v(
    c: &ShmComm,
    cx: &Op,
    send: &[u8],
    mut recv: Option<&mut [u8]>,
    counts: &[usize],
    root: Option<usize>,
) -> Result<()> {
    let (n, me) = (c.n, c.rank);
    let displs = displs(counts);
    if let Some(recv) = recv.as_deref_mut() {
        super::copy::copy_slice(&mut recv[displs[me]..displs[me] + counts[me]], send);
    }
    if n == 1 {
        return Ok(());
    }
    let mut epoch = lock(c);
    let epoch = &mut *epoch;
    let largest = counts.iter().copied().max().unwrap_or(0);
    let single = cma::single(c, epoch, cx, cma::Kind::Gather, largest, usize::MAX)?;
    let eligible = largest >= shared::MIN;
    let watch = in_place_or!(c, epoch, cx, eligible, find(c, eligible, send), |j| counts[j], |e, p| shared::gather(
        c,
        e,
        cx,
        recv.as_deref_mut(),
        (counts, &displs),
        p
    ),);
    if single {
        if !gather_cma(c, epoch, cx, send, recv.as_deref_mut(), counts, &displs, watch)? {
            gather_cma(c, epoch, cx, send, recv, counts, &displs, false)?;
        }
        return Ok(());
    }
    let cap = c.seg.layout.slot;
    let k = counts.iter().map(|&x| x.div_ceil(cap)).max().unwrap_or(0);
    let _ = root; // non-roots pass no `recv`: they only write
    let usual = |epoch: &mut u32, watch: bool| {
        pipeline_w(c, epoch, cx, true, watch, k, |step| match step {
            Step::Write { t, w } => {
                let (s, e) = (t * cap, send.len().min((t + 1) * cap));
                if s < e {
                    to_shm(c.slot(me, w), &send[s..e]);
                }
            }
            Step::Read { t, r } => {
                if let Some(recv) = recv.as_deref_mut() {
                    for j in (0..n).filter(|&j| j != me) {
                        let (s, e) = (t * cap, counts[j].min((t + 1) * cap));
                        if s < e {
                            from_shm(&mut recv[displs[j] + s..displs[j] + e], c.slot(j, r));
                        }
                    }
                }
            }
        })
    };
    restartable(epoch, watch, usual)
}

/// Scatter from `root` of blocks of `counts[j]` bytes (the same `counts` on every rank).
pub(super) fn scatter(
    c: &ShmComm,
    cx: &Op,
    send: Option<&[u8]>,
    recv: &mut [u8],
    counts: &[usize],
    root: usize,
) -> Result<()> {
    let (n, me, m) = (c.n, c.rank, recv.len());
    let displs = displs(counts);
    if let Some(send) = send {
        super::copy::copy_slice(recv, &send[displs[me]..displs[me] + m]);
    }
    if n == 1 {
        return Ok(());
    }
    let mut epoch = lock(c);
    let epoch = &mut *epoch;
    let reg = region(c);
    let k = counts.iter().map(|x| x.div_ceil(reg)).max().unwrap_or(0);
    pipeline(c, epoch, cx, true, k, |step| {
        let chunk = |t: usize| (t * reg, m.min((t + 1) * reg));
        match step {
            Step::Write { t, w } => {
                if let Some(send) = send {
                    write_blocks(c, w, send, (counts, &displs, reg), t, (0..n).filter(|&j| j != me));
                }
            }
            Step::Read { t, r } if me != root => {
                let (s, e) = chunk(t);
                if s < e {
                    from_shm(&mut recv[s..e], c.slot(root, r).wrapping_add(me * reg));
                }
            }
            Step::Read { .. } => {}
        }
    })
}

/// Reduce-scatter of blocks of `counts[j]` bytes (the same `counts` on every rank).
pub(super) fn reduce_scatter(
    c: &ShmComm,
    cx: &Op,
    send: &[u8],
    recv: &mut [u8],
    counts: &[usize],
    dtype: DType,
    op: ReduceOp,
) -> Result<()> {
    let (n, me, m) = (c.n, c.rank, recv.len());
    if n == 1 {
        recv.copy_from_slice(send);
        reduce::finish(dtype, op, 1, recv);
        return Ok(());
    }
    let displs = displs(counts);
    let mut epoch = lock(c);
    let epoch = &mut *epoch;
    let largest = counts.iter().copied().max().unwrap_or(0);
    let eligible = send.len() >= shared::MIN && largest >= shared::MIN_BLOCK;
    let watch =
        in_place_or!(c, epoch, cx, eligible, find(c, eligible, send), |_| send.len(), |e, p| shared::reduce_scatter(
            c, e, cx, recv, displs[me], dtype, op, p
        ),);
    // Items wider than a rank's share of a slot (`region_of` is 0) cannot be folded chunk
    // by chunk: the blocks then come through in byte chunks and are folded on the heap.
    let reg = region_of(c, unit(dtype, op));
    let wide = reg == 0;
    let reg = if wide { region(c) } else { reg };
    let k = counts.iter().map(|x| x.div_ceil(reg)).max().unwrap_or(0);
    let mut all = Gathered::new(if wide { n * m } else { 0 });
    let mut usual = |epoch: &mut u32, watch: bool| {
        pipeline_w(c, epoch, cx, true, watch, k, |step| {
            let chunk = |t: usize| (t * reg, m.min((t + 1) * reg));
            match step {
                Step::Write { t, w } => write_blocks(c, w, send, (counts, &displs, reg), t, 0..n),
                Step::Read { t, r } => {
                    let (s, e) = chunk(t);
                    if s >= e {
                        return;
                    }
                    if wide {
                        for j in 0..n {
                            from_shm(&mut all.bytes()[j * m + s..j * m + e], c.slot(j, r).wrapping_add(me * reg));
                        }
                        return;
                    }
                    let out = &mut recv[s..e];
                    from_shm(out, c.slot(0, r).wrapping_add(me * reg));
                    for i in 1..n {
                        reduce::reduce_into(dtype, op, out, shm(c.slot(i, r).wrapping_add(me * reg), e - s));
                    }
                    reduce::finish(dtype, op, n, out);
                }
            }
        })
    };
    restartable(epoch, watch, &mut usual)?;
    if wide {
        all.fold_into(recv, n, dtype, op);
    }
    Ok(())
}

pub(super) fn all_to_all_v(
    c: &ShmComm,
    cx: &Op,
    send: &[u8],
    scounts: &[usize],
    recv: &mut [u8],
    rcounts: &[usize],
) -> Result<()> {
    let (n, me) = (c.n, c.rank);
    let (sd, rd) = (displs(scounts), displs(rcounts));
    if n == 1 {
        super::copy::copy_slice(&mut recv[..rcounts[0]], &send[..scounts[0]]);
        return Ok(());
    }
    let mut epoch = lock(c);
    let epoch = &mut *epoch;
    let reg = region(c);
    // The fixed-size form (equal blocks on every rank, agreement checked by the op's
    // count) needs no count exchange; the varying one agrees on its counts first.
    if !cx.varying {
        let m = scounts[0];
        let single = cma::single(c, epoch, cx, cma::Kind::AllToAll, m, usize::MAX)?;
        let eligible = send.len() >= shared::MIN && m >= shared::MIN_BLOCK;
        let watch =
            in_place_or!(c, epoch, cx, eligible, find(c, eligible, send), |_| send.len(), |e, p| shared::all_to_all(
                c, e, cx, recv, m, p
            ),);
        let usual = |epoch: &mut u32, watch: bool| {
            if single {
                return all_to_all_cma(c, epoch, cx, send, (scounts, &sd), recv, rcounts, &rd, watch);
            }
            pipeline_w(c, epoch, cx, true, watch, m.div_ceil(reg), |step| {
                let chunk = |t: usize| (t * reg, m.min((t + 1) * reg));
                match step {
                    Step::Write { t, w } => write_blocks(c, w, send, (scounts, &sd, reg), t, 0..n),
                    Step::Read { t, r } => {
                        let (s, e) = chunk(t);
                        for j in 0..n {
                            from_shm(&mut recv[j * m + s..j * m + e], c.slot(j, r).wrapping_add(me * reg));
                        }
                    }
                }
            })
        };
        return restartable(epoch, watch, usual);
    }
    // Agree on the counts first: what j sends me must be what I expect from j, and every
    // rank must take the same number of steps.
    let mut announce: Vec<u64> = scounts.iter().map(|&x| x as u64).collect();
    let mut heard = vec![0u64; n];
    exchange_fixed(c, epoch, cx, bytemuck::cast_slice_mut(&mut announce), bytemuck::cast_slice_mut(&mut heard), 8)?;
    let wrong: Vec<String> = (0..n)
        .filter(|&j| heard[j] != rcounts[j] as u64)
        .map(|j| format!("rank {j} sends {} bytes to rank {me}, which expects {}", heard[j], rcounts[j]))
        .collect();
    let mut agree = [scounts.iter().map(|&x| x.div_ceil(reg)).max().unwrap_or(0) as u64, !wrong.is_empty() as u64];
    let red = Reduction { c, cx, fp: false, watch: false, dtype: DType::U64, op: ReduceOp::Max, root: None };
    red.run(epoch, bytemuck::cast_slice_mut(&mut agree))?;
    if agree[1] != 0 {
        return Err(Error::Mismatch {
            comm: c.name.clone(),
            msg: if wrong.is_empty() {
                format!("all_to_all_v at {}: another rank's counts disagree with its peers' (see its error)", cx.site)
            } else {
                format!("all_to_all_v at {}: {}", cx.site, wrong.join("; "))
            },
        });
    }
    let k = agree[0] as usize;
    // every rank knows k, so every rank takes the same path
    if k * reg >= cma::min_block(c, cma::Kind::AllToAll).saturating_add(reg) && cma::usable(c, epoch, cx)? {
        return all_to_all_cma(c, epoch, cx, send, (scounts, &sd), recv, rcounts, &rd, false).map(|_| ());
    }
    // The counts were agreed above (two barriers, op record compared): k barriers now.
    pipeline(c, epoch, cx, false, k, |step| match step {
        Step::Write { t, w } => {
            for j in 0..n {
                let (s, e) = (t * reg, scounts[j].min((t + 1) * reg));
                if s < e {
                    to_shm(c.slot(me, w).wrapping_add(j * reg), &send[sd[j] + s..sd[j] + e]);
                }
            }
        }
        Step::Read { t, r } => {
            for j in 0..n {
                let (s, e) = (t * reg, rcounts[j].min((t + 1) * reg));
                if s < e {
                    from_shm(&mut recv[rd[j] + s..rd[j] + e], c.slot(j, r).wrapping_add(me * reg));
                }
            }
        }
    })
}

/// All-to-all of `m`-byte blocks that fit one region (used for count exchanges).
fn exchange_fixed(c: &ShmComm, epoch: &mut u32, cx: &Op, send: &mut [u8], recv: &mut [u8], m: usize) -> Result<()> {
    let (n, me) = (c.n, c.rank);
    let reg = region(c);
    debug_assert!(m <= reg);
    let (w, _) = parities(*epoch);
    for j in 0..n {
        to_shm(c.slot(me, w).wrapping_add(j * reg), &send[j * m..(j + 1) * m]);
    }
    c.sync(epoch, cx, true)?;
    let (_, r) = parities(*epoch);
    for j in 0..n {
        from_shm(&mut recv[j * m..(j + 1) * m], c.slot(j, r).wrapping_add(me * reg));
    }
    Ok(())
}
