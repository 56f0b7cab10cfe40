//! Collectives that dist schedules itself on MPI's point-to-point: `MPI_Irecv` and
//! `MPI_Isend` on the communicator under a tag users cannot take ([`tag`]), every request
//! of a phase polled together against the deadline, as every MPI wait is.
//!
//! Why: dist must not block in MPI past the deadline, so it cannot call Open MPI's tuned
//! blocking collectives, and its nonblocking ones (libnbc) allocate a schedule per call
//! and advance it round by round from inside `MPI_Test`. A direct exchange, every block
//! posted at once, takes one round per phase, and Open MPI's shared-memory transport
//! moves each block past 4 KiB with one copy (the receiver reads the sender's buffer),
//! so all receivers copy at once. Used up to [`MAX_RANKS`] ranks on one host (a direct
//! exchange posts `n − 1` messages per rank and phase); larger communicators and those
//! spanning hosts keep libnbc, whose logarithmic and ring schedules scale.
//!
//! Reductions are computed by the rank that owns each segment, folding the ranks'
//! contributions in rank order (0, 1, …, n − 1) with the backend's kernels, then sent
//! to the others: every rank gets the same bits, and the order does not depend on the
//! number of ranks' segmentation or on MPI's choice of algorithm.

use super::ops::{bytes, tag};
use super::{call, count, MpiComm};
use crate::backend::reduce;
use crate::dtype::DType;
use crate::error::Result;
use crate::op::{Op, KEY_LEN, RECORD_LEN};
use crate::reduce_op::ReduceOp;
use mpi::ffi;
use std::ffi::c_int;

/// Largest communicator the direct schedules run on.
pub(super) const MAX_RANKS: usize = 16;

/// Whether `c` runs its collectives here: up to [`MAX_RANKS`] ranks, all on this host
/// (over TCP between two hosts, Open MPI's schedules were ahead for all_gather and
/// all_to_all: docs/performance.md). `DIST_MPI_COLL=mpi` keeps MPI's, for comparison;
/// `own` forces these everywhere.
pub(super) fn applies(c: &MpiComm) -> bool {
    forced().unwrap_or_else(|| c.size <= MAX_RANKS && super::health::on_this_host(&c.world))
}

/// Whether `c` runs its small collectives under `DIST_DEBUG=check` here, in one phase
/// ([`exchange_agreed`]): up to [`MAX_RANKS`] ranks, across hosts too. Over TCP between
/// two hosts the one phase beat Open MPI's nonblocking schedules after a record exchange
/// in every small cell (measured: docs/performance.md, "Figures behind code choices").
pub(super) fn applies_agreed(c: &MpiComm) -> bool {
    forced().unwrap_or(c.size <= MAX_RANKS)
}

/// Whether `c` runs its reductions (all_reduce, reduce_scatter) here: up to
/// [`MAX_RANKS`] ranks, across hosts too. Over TCP between two hosts these beat Open
/// MPI's nonblocking schedules by about two (measured: docs/performance.md, "The staging
/// all-reduce writes only what peers fold; dist's own MPI reductions keep their scratch").
pub(super) fn applies_to_reductions(c: &MpiComm) -> bool {
    forced().unwrap_or(c.size <= MAX_RANKS)
}

/// `DIST_MPI_COLL`: `mpi` keeps Open MPI's collectives, `own` forces dist's.
fn forced() -> Option<bool> {
    static MODE: std::sync::OnceLock<Option<bool>> = std::sync::OnceLock::new();
    *MODE.get_or_init(|| match std::env::var("DIST_MPI_COLL").ok().as_deref().map(str::trim) {
        Some("mpi") => Some(false),
        Some("own") => Some(true),
        _ => None,
    })
}

/// Posts every receive, then every send, and polls them all to completion against the
/// deadline. A block past MPI's largest count goes as consecutive messages of at most
/// that many bytes (both ends cut alike; MPI keeps their order), so these collectives
/// have no 2 GiB limit. On an error the receives still pending are cancelled, so MPI
/// writes no buffer after this returns.
fn exchange(c: &MpiComm, op: &Op, recvs: Vec<(usize, &mut [u8])>, sends: Vec<(usize, &[u8])>) -> Result<()> {
    exchange_counted(c, op, recvs, sends, super::max_count()).map(|_| ())
}

/// [`exchange`], also giving the bytes each receive got (a message may be shorter than
/// its buffer: the receives of the agreement path are sized for the longest message a
/// mismatched peer could send). Blocks are cut into parts of `part` bytes (MPI's largest
/// count; the agreement path, whose messages are far below it and whose receives are
/// longer than what they get, never cuts: both ends must cut alike).
fn exchange_counted(
    c: &MpiComm,
    op: &Op,
    mut recvs: Vec<(usize, &mut [u8])>,
    sends: Vec<(usize, &[u8])>,
    part: usize,
) -> Result<Vec<usize>> {
    // The agreement path's few KiB pass MPI's counts whatever `DIST_MPI_MAX_COUNT` says.
    let wire = |len: usize| if part == super::max_count() { count(len, op.name) } else { Ok(len as c_int) };
    let mut reqs: Vec<ffi::MPI_Request> = Vec::with_capacity(recvs.len() + sends.len());
    let mut nrecv = 0;
    // Which receive each posted part belongs to.
    let mut part_of: Vec<usize> = Vec::with_capacity(recvs.len());
    let posted = (|| -> Result<()> {
        for (i, peer, buf) in
            recvs.iter_mut().enumerate().flat_map(|(i, (p, b))| b.chunks_mut(part).map(move |c| (i, *p, c)))
        {
            let n = wire(buf.len())?;
            // SAFETY: placeholder, written by MPI_Irecv.
            let mut r: ffi::MPI_Request = unsafe { ffi::RSMPI_REQUEST_NULL };
            let p = super::ops::ptr(buf);
            // SAFETY: `buf` outlives the request: it completes, or is cancelled, before we return.
            call("MPI_Irecv", || unsafe { ffi::MPI_Irecv(p, n, bytes(), peer as c_int, tag(), c.comm, &mut r) })?;
            reqs.push(r);
            part_of.push(i);
            nrecv += 1;
        }
        for (peer, buf) in sends.iter().flat_map(|(p, b)| b.chunks(part).map(move |c| (*p, c))) {
            let n = wire(buf.len())?;
            // SAFETY: placeholder, written by MPI_Isend.
            let mut r: ffi::MPI_Request = unsafe { ffi::RSMPI_REQUEST_NULL };
            let p = super::ops::ptr(buf);
            // SAFETY: `buf` outlives the request: it completes, or is let go of, before we
            // return (`release` ends the job when MPI keeps it).
            call("MPI_Isend", || unsafe { ffi::MPI_Isend(p, n, bytes(), peer as c_int, tag(), c.comm, &mut r) })?;
            reqs.push(r);
        }
        Ok(())
    })();
    // SAFETY: plain C structs, written by MPI_Testall.
    let mut statuses: Vec<ffi::MPI_Status> = vec![unsafe { std::mem::zeroed() }; reqs.len()];
    let done = posted.and_then(|()| {
        c.poll(super::Wait::Coll, op.name, op.site, &|| super::health::waiting(c, op), || {
            let mut flag: c_int = 0;
            // SAFETY: live requests of this process (completed ones are MPI_REQUEST_NULL);
            // one status per request.
            call("MPI_Testall", || unsafe {
                ffi::MPI_Testall(reqs.len() as c_int, reqs.as_mut_ptr(), &mut flag, statuses.as_mut_ptr())
            })?;
            Ok(flag != 0)
        })
    });
    if let Err(e) = &done {
        let (recvs, sends) = reqs.split_at_mut(nrecv);
        super::release(c, recvs, e, super::Held::Receive);
        super::release(c, sends, e, super::Held::Send);
    }
    done?;
    let mut got = vec![0usize; recvs.len()];
    for (st, &i) in statuses.iter().zip(&part_of) {
        let mut k: c_int = 0;
        // SAFETY: the status of a completed receive.
        call("MPI_Get_count", || unsafe { ffi::MPI_Get_count(st, bytes(), &mut k) })?;
        got[i] += k.max(0) as usize;
    }
    Ok(got)
}

/// `buf` cut into blocks of `counts[j]` bytes, to read ([`blocks`] to write).
fn pieces<'b>(buf: &'b [u8], counts: &[usize]) -> Vec<&'b [u8]> {
    offsets(counts).into_iter().zip(counts).map(|(o, &k)| &buf[o..o + k]).collect()
}

/// `buf` cut into blocks of `counts[j]` bytes.
fn blocks<'b>(mut buf: &'b mut [u8], counts: &[usize]) -> Vec<&'b mut [u8]> {
    let mut out = Vec::with_capacity(counts.len());
    for &k in counts {
        let (head, rest) = std::mem::take(&mut buf).split_at_mut(k);
        out.push(head);
        buf = rest;
    }
    out
}

/// All-gather: block `j` of `recv` (`counts[j]` bytes) from rank `j`; this rank's is `send`.
pub(super) fn all_gather(c: &MpiComm, op: &Op, send: &[u8], recv: &mut [u8], counts: &[usize]) -> Result<()> {
    let me = c.rank;
    let mut slots = blocks(recv, counts);
    slots[me].copy_from_slice(send);
    let sends = (0..c.size).filter(|&j| j != me).map(|j| (j, send)).collect();
    let recvs = slots.into_iter().enumerate().filter(|(j, _)| *j != me).collect();
    exchange(c, op, recvs, sends)
}

/// All-to-all: block `j` of `send` (`send_counts[j]` bytes) to rank `j`; block `i` of
/// `recv` (`recv_counts[i]` bytes) from rank `i`.
pub(super) fn all_to_all(
    c: &MpiComm,
    op: &Op,
    send: &[u8],
    send_counts: &[usize],
    recv: &mut [u8],
    recv_counts: &[usize],
) -> Result<()> {
    let me = c.rank;
    let outs = pieces(send, send_counts);
    let mut slots = blocks(recv, recv_counts);
    slots[me].copy_from_slice(outs[me]);
    let sends = outs.into_iter().enumerate().filter(|(j, _)| *j != me).collect();
    let recvs = slots.into_iter().enumerate().filter(|(j, _)| *j != me).collect();
    exchange(c, op, recvs, sends)
}

/// Broadcast from `root`: the root sends its buffer to every rank at once.
pub(super) fn broadcast(c: &MpiComm, op: &Op, buf: &mut [u8], root: usize) -> Result<()> {
    if c.rank == root {
        let sends = (0..c.size).filter(|&j| j != root).map(|j| (j, &*buf)).collect();
        exchange(c, op, Vec::new(), sends)
    } else {
        exchange(c, op, vec![(root, buf)], Vec::new())
    }
}

/// Element counts of the `n` segments of `len` elements (the first `len % n` one longer).
fn segments(len: usize, n: usize) -> Vec<usize> {
    (0..n).map(|j| len / n + usize::from(j < len % n)).collect()
}

/// A buffer of `len` bytes aligned for every element type.
fn aligned(len: usize) -> Vec<u128> {
    vec![0u128; len.div_ceil(16)]
}

/// Largest scratch a communicator keeps between calls; a larger one is freed after use.
const SCRATCH_KEEP: usize = 16 << 20;

/// Runs `f` on `len` bytes of this communicator's scratch, aligned for every element
/// type: the buffer of the last call, grown (and zeroed) only when it is too short, so a
/// call pays no allocation, zeroing or page faults of fresh memory (a measurable part of
/// a 64 KiB all-reduce at 2 ranks: docs/performance.md, "Figures behind code choices").
/// A buffer past [`SCRATCH_KEEP`] is used once and freed, the kept one staying. When `f`
/// fails, the buffer it used is leaked, never reused or freed: a receive whose
/// cancellation failed may still land in it. Two threads at once (never on one
/// communicator in a correct program: collectives are ordered) each get a buffer.
fn scratch<R>(c: &MpiComm, len: usize, f: impl FnOnce(&mut [u8]) -> Result<R>) -> Result<R> {
    let mut kept = std::mem::take(&mut *c.scratch.lock().unwrap_or_else(|p| p.into_inner()));
    let mut once = Vec::new();
    let words = if kept.len() * 16 >= len {
        &mut kept
    } else if len <= SCRATCH_KEEP {
        kept = aligned(len);
        &mut kept
    } else {
        once = aligned(len);
        &mut once
    };
    let r = f(&mut bytemuck::cast_slice_mut::<u128, u8>(words)[..len]);
    if r.is_err() {
        if once.is_empty() {
            std::mem::forget(std::mem::take(&mut kept));
        } else {
            std::mem::forget(once);
        }
    }
    *c.scratch.lock().unwrap_or_else(|p| p.into_inner()) = kept;
    r
}

/// Byte offsets of blocks of `counts[j]` bytes laid end to end.
fn offsets(counts: &[usize]) -> Vec<usize> {
    let mut offs = Vec::with_capacity(counts.len());
    let mut off = 0;
    for &k in counts {
        offs.push(off);
        off += k;
    }
    offs
}

/// Reduce-scatter of `send` (`counts[j]` bytes for rank `j`, laid end to end) into
/// `recv`: this rank's block reduced over all ranks, folded in rank order, then the op's
/// post-step (Avg, PreMulSum). Rank 0's block lands in `recv` itself on the other ranks;
/// on rank 0 its own is copied there: the fold starts in place.
pub(super) fn reduce_scatter(
    c: &MpiComm,
    op: &Op,
    d: DType,
    r: ReduceOp,
    send: &[u8],
    recv: &mut [u8],
    counts: &[usize],
) -> Result<()> {
    let (n, me) = (c.size, c.rank);
    let (outs, mine) = (pieces(send, counts), counts[me]);
    let block = |j: usize| outs[j];
    if me == 0 {
        recv.copy_from_slice(block(0));
    }
    // Rank j's block for this rank lands in `theirs[j]` (j ≠ 0, j ≠ me; rank 0's in
    // `recv` itself, where the fold starts).
    scratch(c, mine * n, |words| {
        let mut theirs = blocks(words, &vec![mine; n]);
        {
            let mut recvs: Vec<(usize, &mut [u8])> = Vec::with_capacity(n);
            if me != 0 {
                recvs.push((0, &mut *recv));
            }
            recvs
                .extend(theirs.iter_mut().enumerate().filter(|(j, _)| *j != 0 && *j != me).map(|(j, b)| (j, &mut **b)));
            let sends = (0..n).filter(|&j| j != me).map(|j| (j, block(j))).collect();
            exchange(c, op, recvs, sends)?;
        }
        for (j, t) in theirs.iter().enumerate().skip(1) {
            reduce::reduce_into(d, r, recv, if j == me { block(me) } else { t });
        }
        reduce::finish(d, r, n, recv);
        Ok(())
    })
}

/// Largest all-reduce (bytes per rank × ranks) that takes the one-phase path: up to it
/// one phase measured faster than two at 2 and 4 ranks, past it (8 KiB on 4 ranks)
/// slower (docs/performance.md, "Figures behind code choices").
pub(super) const SMALL: usize = 16 << 10;

/// All-reduce of a small buffer in one phase: every rank sends its whole buffer to every
/// other, and each folds all `n` in rank order itself (the same fold, so the same bits,
/// on every rank). One round of `n − 1` messages each way instead of the two of the
/// segment path: at 8 B the latency is one message's, not two.
pub(super) fn all_reduce_small(c: &MpiComm, op: &Op, d: DType, r: ReduceOp, buf: &mut [u8]) -> Result<()> {
    let (n, me, len) = (c.size, c.rank, buf.len());
    scratch(c, len * n, |words| {
        let mut slots = blocks(words, &vec![len; n]);
        {
            let sends = (0..n).filter(|&j| j != me).map(|j| (j, &*buf)).collect();
            let recvs = slots.iter_mut().enumerate().filter(|(j, _)| *j != me).map(|(j, b)| (j, &mut **b)).collect();
            exchange(c, op, recvs, sends)?;
        }
        // Rank 0 folds in its own buffer (x0 ⊕ x1 ⊕ …); the others copy theirs into its
        // slot and fold the same way. Not rank 1's x1 ⊕ x0 even for an op that commutes:
        // every rank folds here, and where two ranks hold NaNs in one element, which
        // payload survives depends on the order, so ranks would differ in their bits.
        if me == 0 {
            for t in &slots[1..] {
                reduce::reduce_into(d, r, buf, t);
            }
            reduce::finish(d, r, n, buf);
        } else {
            slots[me].copy_from_slice(buf);
            fold(d, r, buf, &slots, 0);
        }
        Ok(())
    })
}

/// `buf` = every rank's contribution (`slots[j][at..at + buf.len()]`, this rank's among
/// them) folded in rank order, then the op's post-step: the same bits on every rank.
fn fold(d: DType, r: ReduceOp, buf: &mut [u8], slots: &[&mut [u8]], at: usize) {
    let len = buf.len();
    reduce::fold_in_order(d, r, buf, slots.iter().map(|t| &t[at..at + len]));
}

/// Longest message an agreement-path receive takes: an op record, or a one-phase
/// collective's key and block ([`exchange_agreed`]: at most 16 KiB behind the key) — the
/// longest first message of a collective under `DIST_DEBUG=check` on these schedules.
const AGREED_MAX: usize = RECORD_LEN + SMALL;

thread_local! {
    /// The agreement path's receive slots, kept per thread between collectives (n × 16.6
    /// KiB would otherwise be allocated and zeroed per op).
    static SLOTS: std::cell::RefCell<Vec<u128>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Runs `f` on `n` receive slots of [`AGREED_MAX`] bytes whose record parts are zeroed
/// (a short message from a mismatched peer never passes for a stale record).
fn with_slots<R>(n: usize, f: impl FnOnce(Vec<&mut [u8]>) -> R) -> R {
    SLOTS.with(|cell| {
        let mut fresh = Vec::new();
        let mut held = cell.try_borrow_mut();
        let words = match held.as_deref_mut() {
            Ok(w) => w,
            Err(_) => &mut fresh,
        };
        if words.len() < (AGREED_MAX * n).div_ceil(16) {
            words.resize((AGREED_MAX * n).div_ceil(16), 0);
        }
        let bytes = &mut bytemuck::cast_slice_mut::<u128, u8>(words)[..AGREED_MAX * n];
        let mut slots = blocks(bytes, &vec![AGREED_MAX; n]);
        for s in slots.iter_mut() {
            s[..RECORD_LEN].fill(0);
        }
        f(slots)
    })
}

/// The agreement all-gather of op records (`DIST_DEBUG=check`) on these schedules: the
/// receives take up to [`AGREED_MAX`] bytes, so a peer that started a one-phase
/// collective instead (its key in front of its data, [`exchange_agreed`]) is read rather
/// than failing MPI's length check. Keys come first in both messages: where they all agree the records
/// are what came; where one differs, every rank sees a difference, and all exchange
/// their whole records once more ([`records_after_mismatch`]) so the comparison above
/// names every call.
pub(super) fn agreement_gather(c: &MpiComm, op: &Op, send: &[u8], recv: &mut [u8]) -> Result<()> {
    let (n, me, k) = (c.size, c.rank, send.len());
    let key = &send[..KEY_LEN.min(k)];
    let same = with_slots(n, |mut slots| {
        {
            let sends = (0..n).filter(|&j| j != me).map(|j| (j, send)).collect();
            let recvs = slots.iter_mut().enumerate().filter(|(j, _)| *j != me).map(|(j, b)| (j, &mut b[..])).collect();
            exchange_counted(c, op, recvs, sends, AGREED_MAX)?;
        }
        let same = (0..n).all(|j| j == me || slots[j][..key.len()] == *key);
        if same {
            for (j, out) in recv.chunks_mut(k).enumerate().take(n) {
                out.copy_from_slice(if j == me { send } else { &slots[j][..k] });
            }
        }
        Ok::<_, crate::error::Error>(same)
    })?;
    if !same {
        let rec: [u8; RECORD_LEN] =
            send.try_into().map_err(|_| crate::error::Error::backend("mpi", "a record of another length"))?;
        for (out, r) in recv.chunks_mut(k).zip(records_after_mismatch(c, op, &rec)?) {
            out.copy_from_slice(&r);
        }
    }
    Ok(())
}

/// The second exchange after keys disagreed: every rank's whole record, by rank.
fn records_after_mismatch(c: &MpiComm, op: &Op, mine: &[u8; RECORD_LEN]) -> Result<Vec<[u8; RECORD_LEN]>> {
    let (n, me) = (c.size, c.rank);
    with_slots(n, |mut slots| {
        {
            let sends = (0..n).filter(|&j| j != me).map(|j| (j, &mine[..])).collect();
            let recvs = slots.iter_mut().enumerate().filter(|(j, _)| *j != me).map(|(j, b)| (j, &mut b[..])).collect();
            exchange_counted(c, op, recvs, sends, AGREED_MAX)?;
        }
        Ok((0..n)
            .map(|j| if j == me { *mine } else { slots[j][..RECORD_LEN].try_into().expect("one record") })
            .collect())
    })
}

/// A small collective under `DIST_DEBUG=check` in one phase: each message is the
/// sender's 32-byte op key followed by what its receiver is due (`due[j]`, possibly
/// nothing: every rank sends every other at least its key), so the comparison of every
/// rank's op rides in the one exchange the collective makes anyway, where the generic
/// path exchanges whole records first (a second round; measured: docs/performance.md,
/// "Figures behind code choices"). Receives take up to [`AGREED_MAX`] bytes, the longest
/// first message of any collective under the checks, so a peer in another op is read,
/// never written past (docs/design.md, "No receive is posted before its message's length
/// is known": Open MPI writes a longer message past a shorter receive's end).
/// Where every key agrees, `finish` gets the slots (rank j's bytes at `KEY_LEN..KEY_LEN +
/// expect[j]`; this rank's slot free for its own use). Where one differs, every rank sees
/// a difference, and the whole records follow ([`records_after_mismatch`]) to name the
/// calls.
fn exchange_agreed(
    c: &MpiComm,
    name: &str,
    op: &Op,
    due: Due<'_>,
    expect: impl Fn(usize) -> usize,
    inout: &mut [u8],
    finish: impl FnOnce(&mut [&mut [u8]], &mut [u8]),
) -> Result<()> {
    let (n, me) = (c.size, c.rank);
    let key = op.key();
    let peers = || (0..n).filter(move |&j| j != me);
    let msg = |d: &[u8]| {
        let mut m = Vec::with_capacity(KEY_LEN + d.len());
        m.extend_from_slice(&key);
        m.extend_from_slice(d);
        m
    };
    // One message for every peer, or one per peer.
    let msgs: Vec<Vec<u8>> = match due {
        Due::Nothing => vec![msg(&[])],
        Due::InOut => vec![msg(inout)],
        Due::All(d) => vec![msg(d)],
        Due::Each(ds) => (0..n).map(|j| if j == me { Vec::new() } else { msg(ds[j]) }).collect(),
    };
    let of = |j: usize| &msgs[if msgs.len() == 1 { 0 } else { j }][..];
    let same = with_slots(n, |mut slots| {
        let got = {
            let sends = peers().map(|j| (j, of(j))).collect();
            let recvs = slots.iter_mut().enumerate().filter(|(j, _)| *j != me).map(|(j, b)| (j, &mut b[..])).collect();
            exchange_counted(c, op, recvs, sends, AGREED_MAX)?
        };
        if peers().any(|j| slots[j][..KEY_LEN] != key) {
            return Ok(false);
        }
        if let Some((j, &g)) = peers().zip(&got).find(|&(j, &g)| g != KEY_LEN + expect(j)) {
            return Err(crate::error::Error::backend(
                "mpi",
                format!("{}: rank {j} sent {g} bytes where its op promised {}", op.name, KEY_LEN + expect(j)),
            ));
        }
        finish(&mut slots, inout);
        Ok(true)
    })?;
    if !same {
        let recs = records_after_mismatch(c, op, &op.record())?;
        crate::verify::agreement(name, me, op, peers().map(|j| (j, recs[j])))?;
        return Err(crate::error::Error::backend(
            "mpi",
            format!("{}: the ranks' op keys differ, their records do not", op.name),
        ));
    }
    Ok(())
}

/// What a rank sends each peer behind its key in [`exchange_agreed`].
enum Due<'a> {
    /// The key alone.
    Nothing,
    /// The buffer the op works in (its contents before the op).
    InOut,
    /// The same bytes to every peer.
    All(&'a [u8]),
    /// `ds[j]` to rank `j`.
    Each(&'a [&'a [u8]]),
}

/// [`all_reduce_small`] under `DIST_DEBUG=check` ([`exchange_agreed`]: an 8-byte
/// all-reduce stays under Open MPI's 256-byte inline sends, which a whole record crosses
/// at a cost; measured: docs/performance.md, "Figures behind code choices"); the fold
/// runs only once every key agrees.
pub(super) fn all_reduce_small_agreed(
    c: &MpiComm,
    name: &str,
    op: &Op,
    d: DType,
    r: ReduceOp,
    buf: &mut [u8],
) -> Result<()> {
    let (me, len) = (c.rank, buf.len());
    exchange_agreed(
        c,
        name,
        op,
        Due::InOut,
        |_| len,
        buf,
        |slots, buf| {
            slots[me][KEY_LEN..KEY_LEN + len].copy_from_slice(buf);
            fold(d, r, buf, slots, KEY_LEN);
        },
    )
}

/// [`all_gather`] under `DIST_DEBUG=check`, in one phase ([`exchange_agreed`]).
pub(super) fn all_gather_agreed(
    c: &MpiComm,
    name: &str,
    op: &Op,
    send: &[u8],
    recv: &mut [u8],
    counts: &[usize],
) -> Result<()> {
    let me = c.rank;
    exchange_agreed(
        c,
        name,
        op,
        Due::All(send),
        |j| counts[j],
        recv,
        |slots, recv| {
            for (j, out) in blocks(recv, counts).into_iter().enumerate() {
                out.copy_from_slice(if j == me { send } else { &slots[j][KEY_LEN..KEY_LEN + counts[j]] });
            }
        },
    )
}

/// [`all_to_all`] under `DIST_DEBUG=check`, in one phase ([`exchange_agreed`]).
pub(super) fn all_to_all_agreed(
    c: &MpiComm,
    name: &str,
    op: &Op,
    send: &[u8],
    send_counts: &[usize],
    recv: &mut [u8],
    recv_counts: &[usize],
) -> Result<()> {
    let me = c.rank;
    let outs = pieces(send, send_counts);
    exchange_agreed(
        c,
        name,
        op,
        Due::Each(&outs),
        |j| recv_counts[j],
        recv,
        |slots, recv| {
            for (j, out) in blocks(recv, recv_counts).into_iter().enumerate() {
                out.copy_from_slice(if j == me { outs[me] } else { &slots[j][KEY_LEN..KEY_LEN + recv_counts[j]] });
            }
        },
    )
}

/// [`broadcast`] under `DIST_DEBUG=check`, in one phase ([`exchange_agreed`]): the root
/// sends its key and buffer, every other rank its key alone.
pub(super) fn broadcast_agreed(c: &MpiComm, name: &str, op: &Op, buf: &mut [u8], root: usize) -> Result<()> {
    let (me, len) = (c.rank, buf.len());
    let due = if me == root { Due::InOut } else { Due::Nothing };
    exchange_agreed(
        c,
        name,
        op,
        due,
        |j| if j == root { len } else { 0 },
        buf,
        |slots, buf| {
            if me != root {
                buf.copy_from_slice(&slots[root][KEY_LEN..KEY_LEN + len]);
            }
        },
    )
}

/// [`reduce_scatter`] under `DIST_DEBUG=check`, in one phase ([`exchange_agreed`]): block
/// `j` goes to rank `j` behind the key; every rank folds its block's `n` contributions
/// in rank order.
#[allow(clippy::too_many_arguments)]
pub(super) fn reduce_scatter_agreed(
    c: &MpiComm,
    name: &str,
    op: &Op,
    d: DType,
    r: ReduceOp,
    send: &[u8],
    recv: &mut [u8],
    counts: &[usize],
) -> Result<()> {
    let me = c.rank;
    let outs = pieces(send, counts);
    let mine = counts[me];
    exchange_agreed(
        c,
        name,
        op,
        Due::Each(&outs),
        |_| mine,
        recv,
        |slots, recv| {
            slots[me][KEY_LEN..KEY_LEN + mine].copy_from_slice(outs[me]);
            fold(d, r, recv, slots, KEY_LEN);
        },
    )
}

/// All-reduce in place: a reduce-scatter of the buffer's `n` segments (each reduced by
/// its owner, in place in the buffer), then an all-gather of the reduced segments
/// straight into the others' buffers. Copies: this rank's own segment once, on ranks
/// that cannot start the fold with it (all but rank 0, and rank 1 for an op that
/// commutes: it must survive until its turn in the fold). Each segment's owner folds it
/// and sends it to every rank, so all get the same bits.
pub(super) fn all_reduce(c: &MpiComm, op: &Op, d: DType, r: ReduceOp, buf: &mut [u8]) -> Result<()> {
    let (n, me, es) = (c.size, c.rank, d.size());
    let counts: Vec<usize> = segments(buf.len() / es, n).into_iter().map(|k| k * es).collect();
    let mine = counts[me];
    let mut slots = blocks(buf, &counts);
    let seg: &mut [u8] = std::mem::take(&mut slots[me]);
    // The fold starts in this rank's own segment on rank 0, and on rank 1 for an op that
    // commutes (x1 ⊕ x0 = x0 ⊕ x1); on the others rank 0's block lands in the segment
    // and this rank's own contribution is kept aside, in its own block of the scratch
    // (no peer's lands there).
    let in_place = me == 0 || (me == 1 && reduce::commutes(d, r));
    scratch(c, mine * n, |words| {
        let mut theirs = blocks(words, &vec![mine; n]);
        if !in_place {
            theirs[me].copy_from_slice(seg);
        }
        {
            let mut recvs: Vec<(usize, &mut [u8])> = Vec::with_capacity(n);
            if !in_place {
                recvs.push((0, &mut *seg));
            }
            let skip = |j: usize| j == me || (j == 0 && !in_place);
            recvs.extend(theirs.iter_mut().enumerate().filter(|(j, _)| !skip(*j)).map(|(j, b)| (j, &mut **b)));
            let sends = slots.iter().enumerate().filter(|(j, _)| *j != me).map(|(j, b)| (j, &**b)).collect();
            exchange(c, op, recvs, sends)?;
        }
        if in_place {
            for (_, t) in theirs.iter().enumerate().filter(|(j, _)| *j != me) {
                reduce::reduce_into(d, r, seg, t);
            }
        } else {
            for t in &theirs[1..] {
                reduce::reduce_into(d, r, seg, t);
            }
        }
        reduce::finish(d, r, n, seg);
        Ok(())
    })?;
    let sends = (0..n).filter(|&j| j != me).map(|j| (j, &*seg)).collect();
    let recvs = slots.into_iter().enumerate().filter(|(j, _)| *j != me).collect();
    exchange(c, op, recvs, sends)
}
