//! The single-copy forms of the collectives: each rank publishes where its buffer is
//! (`slots::publish`) and its peers read it straight from its memory with
//! `process_vm_readv` (`cma.rs`): gather, broadcast (the root's readers help each other
//! past [`HELPED_BROADCAST_MIN`]) and all-to-all. `coll.rs` chooses them by length, on
//! every rank alike, and falls back to the staging slots where a read fails.

use super::slots::{parities, publish, published};
use super::{cma, shared, ShmComm};
use crate::error::{Error, Result};
use crate::op::Op;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed};

/// Ranks in the order this rank reads them: itself, then the next ones round the ring,
/// so no two readers start on the same peer's pages (each `process_vm_readv` pins the
/// pages it reads: readers in step would contend on the same page counts). all_to_all
/// measured faster this way at 4 and 8 ranks on 2 cores; all_gather no different (within
/// the noise), so it keeps rank order (docs/performance.md, "Figures behind code choices").
fn staggered(c: &ShmComm) -> impl Iterator<Item = usize> {
    let (n, me) = (c.n, c.rank);
    (0..n).map(move |k| (me + k) % n)
}

/// The error of a single-copy collective whose ranks disagree on a length: rank `j` lent
/// `lent` bytes where this rank's call reads `want`. Under `DIST_DEBUG=check` the calls
/// were compared before (and this never happens); with the checks off it stands for them.
fn lengths_differ(c: &ShmComm, cx: &Op, j: usize, lent: usize, want: usize) -> Error {
    Error::Mismatch {
        comm: c.name.clone(),
        msg: format!(
            "{} at {}: rank {j} lent a buffer of {lent} bytes where this rank's call reads {want}: the ranks' calls \
             disagree (DIST_DEBUG=off compares nothing; DIST_DEBUG=check names both calls)",
            cx.name, cx.site
        ),
    }
}

/// Gather / all-gather by reading each peer's send buffer directly (one copy per byte).
/// Two barriers: after the addresses are published, and after every read is done (no
/// rank may return, and reuse its buffer, while a peer still reads it).
#[allow(clippy::too_many_arguments)]
pub(super) fn gather_cma(
    c: &ShmComm,
    epoch: &mut u32,
    cx: &Op,
    send: &[u8],
    recv: Option<&mut [u8]>,
    counts: &[usize],
    displs: &[usize],
    watch: bool,
) -> Result<bool> {
    publish(c, *epoch, &[send.as_ptr() as u64, send.len() as u64]);
    c.sync(epoch, cx, true)?;
    if watch && shared::published(c) {
        return Ok(false);
    }
    // Nothing is read past what a peer lent, whatever the calls say (`DIST_DEBUG=off`
    // compares nothing before this): a length that disagrees is an error, read from none.
    let lent = |j: usize| published(c, *epoch, j, 1) as usize;
    let mut res = match (0..c.n).find(|&j| j != c.rank && lent(j) != counts[j]) {
        Some(j) => Err(lengths_differ(c, cx, j, lent(j), counts[j])),
        None => Ok(()),
    };
    if let (Some(recv), true) = (recv, res.is_ok()) {
        for j in (0..c.n).filter(|&j| j != c.rank && counts[j] > 0) {
            let addr = published(c, *epoch, j, 0);
            if let Err(e) = cma::read(cma::pid(c, j), addr, &mut recv[displs[j]..displs[j] + counts[j]]) {
                res = Err(cma::err(j, e));
                break;
            }
        }
    }
    c.sync(epoch, cx, false)?;
    res.map(|_| true)
}

/// Broadcast by reading the root's buffer directly (one copy per byte, every reader at
/// once), the root helping: each receiver's buffer is cut in pieces, which the receiver
/// reads from the root's buffer and the root, idle otherwise, writes into the receiver's
/// (`process_vm_writev`), each side taking the next piece with a fetch-add on a claim
/// word the receiver publishes (as a point-to-point sender helps its receiver, `p2p.rs`).
/// At 2 ranks two cores copy where one did. As in [`gather_cma`], the second barrier
/// keeps the root's buffer lent until every read is done; a receiver does not arrive
/// there before every piece the root took is written, and reads the ones whose write
/// failed itself.
pub(super) fn broadcast_cma(
    c: &ShmComm,
    epoch: &mut u32,
    cx: &Op,
    buf: &mut [u8],
    root: usize,
    watch: bool,
) -> Result<bool> {
    let (np, piece) = bcast_pieces(buf.len(), c.n);
    // Words: the buffer's address, the receiver's claim counter, the count of pieces the
    // root wrote into it (`HELP_FAILED` set when one of its writes failed), its length.
    publish(c, *epoch, &[buf.as_ptr() as u64, 0, 0, buf.len() as u64]);
    c.sync(epoch, cx, true)?;
    if watch && shared::published(c) {
        return Ok(false);
    }
    let (_, r) = parities(*epoch);
    let word = |j: usize, k: usize| {
        // SAFETY: the first words of rank j's slot of the read parity, which hold what
        // j published for this op (4 words, 8-aligned): from the barrier above to the
        // one below nobody writes them but through these atomics.
        unsafe { &*(c.slot(j, r).add(8 * k) as *const std::sync::atomic::AtomicU64) }
    };
    // Every rank sees every length: where they are not all equal, every rank finds one
    // that differs from its own, and none reads or writes (nothing past what was lent).
    // Read through the atomics: a faster rank may already be claiming pieces (words 1, 2).
    let lent = |j: usize| word(j, 3).load(Relaxed) as usize;
    if let Some(j) = (0..c.n).find(|&j| lent(j) != buf.len()) {
        c.sync(epoch, cx, false)?;
        return Err(lengths_differ(c, cx, j, lent(j), buf.len()));
    }
    let mut res = Ok(());
    if c.rank == root {
        if np > 1 {
            help_broadcast(c, buf, np, piece, &word);
        }
    } else {
        let (pid, addr) = (cma::pid(c, root), word(root, 0).load(Relaxed));
        // Reads piece i of the root's buffer into this rank's.
        let read = |buf: &mut [u8], i: usize| {
            let (s, e) = (i * piece, buf.len().min((i + 1) * piece));
            cma::read(pid, addr + s as u64, &mut buf[s..e]).map_err(|e| cma::err(root, e))
        };
        if np <= 1 {
            res = read(buf, 0);
        } else {
            let claim = word(c.rank, 1);
            let mut mine = 0u64;
            loop {
                let i = claim.fetch_add(1, AcqRel) as usize;
                if i >= np {
                    break;
                }
                mine |= 1 << i;
                // After a failed read the rest are taken unread: every piece then has
                // an owner, so the root's count below reaches its share.
                if res.is_ok() {
                    res = read(buf, i);
                }
            }
            // The root's pieces are being written into `buf`: wait for them whatever
            // happened here, so no write lands after this op returns.
            let theirs = np as u64 - mine.count_ones() as u64;
            if !wait_helped(word(c.rank, 2), theirs, pid) && res.is_ok() {
                // A write of the root's failed (or the root is gone): read what it took.
                res = (0..np).filter(|&i| mine & (1 << i) == 0).try_for_each(|i| read(buf, i));
            }
        }
    }
    c.sync(epoch, cx, false)?;
    res.map(|_| true)
}

/// Set in a receiver's count of pieces its root wrote when one of those writes failed.
const HELP_FAILED: u64 = 1 << 63;

/// Smallest single-copy broadcast the root helps copy: at 64 KiB the claims and a second
/// system call cost more than half a copy saves, and from 128 KiB on the help pays
/// (measured at 2 ranks: docs/performance.md, "Figures behind code choices").
const HELPED_BROADCAST_MIN: usize = 128 << 10;

/// How a single-copy broadcast of `len` bytes to `n` ranks is cut (pieces, bytes per
/// piece): one piece a share of the n ranks' work (the root's included), at least 32
/// KiB (below that a second system call and the claim's cache line cost more than the
/// share saves: the point-to-point measurement, `p2p.rs`), and at most 64 pieces.
fn bcast_pieces(len: usize, n: usize) -> (usize, usize) {
    const MIN: usize = 32 << 10;
    if len < HELPED_BROADCAST_MIN {
        return (1, len.max(1));
    }
    // At most 64 pieces: a receiver keeps the ones it took in a 64-bit mask.
    let piece = len.div_ceil(n).max(len.div_ceil(64)).next_multiple_of(4096).max(MIN);
    (len.div_ceil(piece), piece)
}

/// The root's share of a single-copy broadcast: round the receivers, it takes one piece
/// of each in turn (a fetch-add on the receiver's claim word) and writes it from `buf`
/// into the receiver's buffer, until every receiver's pieces are taken. A receiver it
/// failed to write into gets no more of its help (and reads the failed piece itself).
fn help_broadcast<'a>(
    c: &ShmComm,
    buf: &[u8],
    np: usize,
    piece: usize,
    word: &impl Fn(usize, usize) -> &'a std::sync::atomic::AtomicU64,
) {
    let mut open: Vec<usize> = staggered(c).filter(|&j| j != c.rank).collect();
    while !open.is_empty() {
        open.retain(|&j| {
            let i = word(j, 1).fetch_add(1, AcqRel) as usize;
            if i >= np {
                return false;
            }
            let (s, e) = (i * piece, buf.len().min((i + 1) * piece));
            let addr = word(j, 0).load(Relaxed) + s as u64;
            let ok = cma::write(cma::pid(c, j), addr, &buf[s..e]).is_ok();
            word(j, 2).fetch_add(1 | if ok { 0 } else { HELP_FAILED }, AcqRel);
            ok
        });
    }
}

/// A receiver's wait for the `theirs` pieces its root took (`done`: the root's count,
/// [`HELP_FAILED`] set when a write failed): true when all were written; false when one
/// failed or the root is gone (`sync::await_peer`: no deadline, the root is inside its
/// writes into this rank's buffer).
fn wait_helped(done: &std::sync::atomic::AtomicU64, theirs: u64, root_pid: u32) -> bool {
    super::sync::await_peer(root_pid, || {
        let d = done.load(Acquire);
        if d & HELP_FAILED != 0 && d & !HELP_FAILED >= theirs {
            Some(false)
        } else {
            (d == theirs).then_some(true)
        }
    })
    .unwrap_or(false)
}

/// All-to-all by reading, from each peer j, the block j sends to this rank straight out
/// of j's send buffer. Each rank publishes its buffer's address and block offsets.
#[allow(clippy::too_many_arguments)]
pub(super) fn all_to_all_cma(
    c: &ShmComm,
    epoch: &mut u32,
    cx: &Op,
    send: &[u8],
    (scounts, sd): (&[usize], &[usize]),
    recv: &mut [u8],
    rcounts: &[usize],
    rd: &[usize],
    watch: bool,
) -> Result<bool> {
    let (n, me) = (c.n, c.rank);
    // Words: the buffer's address, then the offset and the length of each block.
    let mut words = Vec::with_capacity(2 * n + 1);
    words.push(send.as_ptr() as u64);
    words.extend(sd.iter().map(|&d| d as u64));
    words.extend(scounts.iter().map(|&x| x as u64));
    publish(c, *epoch, &words);
    c.sync(epoch, cx, true)?;
    if watch && shared::published(c) {
        return Ok(false);
    }
    // What j lends this rank must be what this rank reads (nothing past a peer's block).
    let lent = |j: usize| published(c, *epoch, j, 1 + n + me) as usize;
    let mut res = match (0..n).find(|&j| j != me && lent(j) != rcounts[j]) {
        Some(j) => Err(lengths_differ(c, cx, j, lent(j), rcounts[j])),
        None => Ok(()),
    };
    for j in staggered(c).filter(|_| res.is_ok()) {
        let dst = &mut recv[rd[j]..rd[j] + rcounts[j]];
        if j == me {
            super::copy::copy_slice(dst, &send[sd[me]..sd[me] + rcounts[me]]);
            continue;
        }
        if rcounts[j] == 0 {
            continue;
        }
        let at = published(c, *epoch, j, 0) + published(c, *epoch, j, 1 + me);
        if let Err(e) = cma::read(cma::pid(c, j), at, dst) {
            res = Err(cma::err(j, e));
            break;
        }
    }
    c.sync(epoch, cx, false)?;
    res.map(|_| true)
}
