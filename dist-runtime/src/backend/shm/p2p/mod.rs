//! Point-to-point messages over one single-producer/single-consumer byte ring per
//! ordered pair of ranks.
//!
//! A message is a 40-byte header (tag, dtype, length, the sender's line and an index into
//! its table of files) followed by its payload, streamed through the ring as space frees
//! up, so messages of any size pass through a ring of fixed size. Messages start on cache
//! lines and take whole lines; a header is seen by its mark (its first word, stored
//! last, a function of its position), so a small message written whole is taken from the
//! one line it shares with its header, without the ring's head (shm README). Matching follows MPI: per (source, tag), the k-th
//! receive posted gets the k-th message sent. A message that arrives before its receive
//! is waited on goes to a stash; a receive being waited on takes its message straight
//! from the ring into the user's buffer.
//!
//! Single copy: a blocking send of `DIST_CMA_P2P_MIN` (8 KiB) or more offers its
//! buffer instead of streaming it. It writes the buffer's address in the ring's offer
//! words and sends the header alone, marked; the receiver that takes the header claims
//! the offer (compare-and-swap OFFERED → TAKEN), reads the payload straight from the
//! sender's memory with `process_vm_readv` into the receive's buffer (or its stash), and
//! marks it DONE, which releases the send. A send that fits the ring and whose receiver
//! has not claimed it within [`WITHDRAW_AFTER`] withdraws the offer (OFFERED →
//! WITHDRAWN) and streams the payload after its header, as an ordinary send, so a send
//! still returns while its receiver computes; a receiver whose read fails declines
//! (DECLINED) and gets the payload the same way, and that sender streams through the
//! ring from then on. Whoever's compare-and-swap wins decides: the payload is read
//! from the sender's buffer, or it follows in the ring — never both.
//!
//! Both ends copy: from 64 KiB the receiver reads one half while its sender, which
//! waits in its send anyway, writes the other into the receiver's buffer
//! (`process_vm_writev`, see [`take_offer`]), so two cores move a message where one
//! did, and a message of any size takes this path (one copy on each core beats the
//! ring's copy in and copy out at every size measured, 2 MiB to 64 MiB at 2 ranks:
//! docs/performance.md, "Both ends copy, a barrier on each rank's own word, bound ranks").
//!
//! Soundness: the engine never keeps a pointer into a user buffer past the call that
//! lent it (an offer's address is read only while its blocking send waits for it, and a
//! receive's buffer is written by its sender only while the receive waits for those
//! writes). A non-blocking send copies whatever it can't hand over at once; a
//! non-blocking receive lands in the stash unless its own `wait` is running. So a
//! handle that is leaked (`mem::forget`) can leak memory but never corrupt it.
//!
//! Files: `wire.rs` (the header and the ring's control words), `ring.rs` (one ring's
//! writing and reading), `engine.rs` (matching and progress), `offer.rs` (single copy);
//! here, the backend's entry points.

use super::segment::{RING_CTL, SITES, SITE_LEN};
use super::{sync, ShmComm};
use crate::backend::ReqId;
use crate::dtype::DType;
use crate::error::{Error, Result, Site};
use std::collections::VecDeque;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
use std::time::Instant;

mod engine;
mod offer;
mod ring;
mod wire;

pub(super) use engine::P2p;
use engine::*;
use offer::*;
use ring::*;
use wire::*;

/// Tells the sender `src` that a receive for its blocking send `sync` (on `tag`) is
/// posted (`sync` 0: the message came from a send that waits for nothing).
///
/// Only for a tag beyond the table of posted receives: where the table holds the tag, the
/// sender sees the receive there (its count covers the message), and a store to a line
/// the sender then has to read again would only cost both sides a cache miss.
fn ack(c: &ShmComm, src: usize, tag: u32, sync: u32) {
    if sync != 0 {
        let ring = Ring::new(c, src, c.rank);
        if ring.posted(tag).is_none() {
            ring.ack.store(sync, Release);
            c.bell(src).ring();
        }
    }
}

/// MPI's progress rule for a rank waiting elsewhere (a collective's barrier): moves the
/// bytes its queues hold into their rings (and reads what arrives meanwhile, as any
/// progress does), so an `isend` larger than its ring completes while its sender waits
/// in a collective its receiver reaches only after its `recv`. Whether bytes moved. Free
/// when nothing is queued; never waits for the engine's lock (a thread inside it moves
/// the bytes itself).
pub(super) fn push_pending(c: &ShmComm) -> bool {
    if !c.pending_out.load(Relaxed) {
        return false;
    }
    let Ok(mut p) = c.p2p.try_lock() else { return false };
    let before = c.moved.load(Relaxed);
    p.progress(c, None);
    c.moved.load(Relaxed) != before
}

fn lock(c: &ShmComm) -> std::sync::MutexGuard<'_, P2p> {
    c.p2p.lock().unwrap_or_else(|p| p.into_inner())
}

/// Drives progress until `done` holds, sleeping on this rank's doorbell in between.
fn drive(
    c: &ShmComm,
    p: &mut P2p,
    site: Site,
    op: &'static str,
    (peer, tag): (usize, Option<u32>),
    mut done: impl FnMut(&mut P2p) -> Result<bool>,
) -> Result<()> {
    let started = Instant::now();
    let me = c.rank;
    let name = crate::error::user_op(op);
    let waiting = move || {
        if op == "recv" {
            format!("rank {me} waits in {name} from rank {peer} ({site})")
        } else {
            format!("rank {me} waits in {name} to rank {peer} ({site}), which is not receiving")
        }
    };
    let blocked = std::cell::Cell::new(false);
    let kind = if op == "recv" { crate::verify::watchdog::WAIT_RECV } else { crate::verify::watchdog::WAIT_SEND };
    let ws = super::records::WaitState::with_tag(kind, peer as u32, tag);
    let r = sync::wait_on(
        &c.bell(me),
        c.pace(),
        || done(p),
        || c.health(&mut std::iter::once(peer), name, site, started, &waiting, &ws),
        || {
            blocked.set(true);
            c.mark_wait(kind, peer as u32, name, site);
        },
    );
    if blocked.get() {
        c.clear_wait();
    }
    crate::verify::deadlock::settle(r)
}

pub(super) fn post_send(c: &ShmComm, site: Site, dst: usize, tag: u32, dtype: DType, data: &[u8]) -> Result<ReqId> {
    let mut p = lock(c);
    let hdr = p.header(c, tag, dtype, data.len(), site, 0);
    let id = enqueue(c, &mut p, dst, hdr, data);
    // Whatever did not go out yet must not keep pointing at the caller's buffer.
    // (It is the last queued for `dst`, if it is there at all.)
    if let Some(o) = p.out[dst].back_mut().filter(|o| o.id == id) {
        let copy = o.data.bytes()[o.off.saturating_sub(HDR)..].to_vec();
        let n = copy.len() as u64;
        o.data = Payload::Owned(copy);
        o.base = o.off.max(HDR);
        p.copied[dst] += n;
    }
    // Bounded memory: past `DIST_ISEND_MIB` of copies waiting for `dst`, this send waits
    // (reading what arrives meanwhile, up to the stash's own bound) until the peer has
    // read enough, as a send on a bounded transport does; never for a send to itself.
    let limit = c.cfg.isend_limit;
    if dst != c.rank && p.copied[dst] > limit {
        drive(c, &mut p, site, "isend", (dst, Some(tag)), |p| {
            p.progress(c, None);
            Ok(p.copied[dst] <= limit)
        })?;
    }
    Ok(id)
}

/// Queues a send borrowing `data` and pushes out what fits now.
fn enqueue(c: &ShmComm, p: &mut P2p, dst: usize, hdr: [u8; HDR], data: &[u8]) -> ReqId {
    let tag = u32::from_le_bytes(hdr[TAG_AT..TAG_AT + 4].try_into().expect("4 bytes"));
    *p.sent.entry((dst, tag)).or_insert(0) += 1;
    let id = p.next_id;
    p.next_id += 1;
    p.send_dst.insert(id, dst);
    p.out[dst].push_back(Out { id, hdr, data: Payload::Borrowed(data.as_ptr(), data.len()), off: 0, base: HDR });
    p.progress(c, None);
    id
}

/// Blocking send: streams straight from the caller's buffer (no copy), which stays
/// borrowed until every byte is in the ring.
///
/// In rendezvous mode (`Config::rendezvous`) it also waits until the receiver has posted
/// the matching receive (the receiver stores this send's id in the ring's ack word), as
/// NCCL and `MPI_Ssend` do: two ranks that both send first deadlock here as they would
/// there, and the deadlock detector names them.
pub(super) fn send(c: &ShmComm, site: Site, dst: usize, tag: u32, dtype: DType, data: &[u8]) -> Result<()> {
    let mut p = lock(c);
    let sync = if c.cfg.rendezvous && dst != c.rank && super::board::single_thread() {
        p.sync_ids[dst] = p.sync_ids[dst].wrapping_add(1).max(1);
        p.sync_ids[dst]
    } else {
        0
    };
    if sync != 0 {
        // The send will read the receiver's table of posted receives once its message
        // is out: start that read now, so its cache miss overlaps the message's.
        Ring::new(c, c.rank, dst).prefetch_posted();
    }
    // This message's place among those to `dst` on `tag` (as the receiver counts them).
    let ord = p.sent.get(&(dst, tag)).copied().unwrap_or(0);
    let acked = move |c: &ShmComm| {
        let ring = Ring::new(c, c.rank, dst);
        // The table first: it usually has the answer, and the ack word shares a line
        // with the ring's tail, which the receiver keeps writing.
        sync == 0 || ring.posted(tag).is_some_and(|n| n > ord) || ring.ack.load(Acquire) == sync
    };
    let hdr = p.header(c, tag, dtype, data.len(), site, sync);
    if dst != c.rank && !p.offer_off[dst] && data.len() >= super::cma::p2p_min(c) {
        return send_offer(c, &mut p, site, dst, hdr, data, acked);
    }
    let id = enqueue(c, &mut p, dst, hdr, data);
    let r = drive(c, &mut p, site, "send", (dst, Some(tag)), |p| {
        p.progress(c, None);
        Ok(p.done_sends.contains(&id) && acked(c))
    });
    p.done_sends.remove(&id);
    p.send_dst.remove(&id);
    if r.is_err() {
        // Never leave a pointer to the caller's buffer behind.
        p.abandon(dst, id, false);
        p.note_pending(c);
    }
    r
}

pub(super) fn wait_send(c: &ShmComm, site: Site, id: ReqId) -> Result<()> {
    let mut p = lock(c);
    let dst = p.send_dst.get(&id).copied().ok_or_else(|| Error::invalid("wait", "unknown send request"))?;
    let r = drive(c, &mut p, site, "send", (dst, None), |p| {
        p.progress(c, None);
        Ok(p.done_sends.contains(&id))
    });
    p.done_sends.remove(&id);
    p.send_dst.remove(&id);
    r
}

pub(super) fn wait_recv(c: &ShmComm, site: Site, id: ReqId, dtype: DType, buf: &mut [u8]) -> Result<()> {
    let mut p = lock(c);
    let key = p.recvs.remove(&id).ok_or_else(|| Error::invalid("wait", "unknown receive request"))?;
    receive(c, &mut p, Target { key, dtype, buf, up_to: false, got: 0, done: false, err: None, site }).map(|_| ())
}

/// Waits for the message of a receive bound to `t.key` (taken from the stash or straight
/// from the ring); its length in bytes.
fn receive(c: &ShmComm, p: &mut P2p, mut t: Target<'_>) -> Result<usize> {
    let (site, src) = (t.site, t.key.0);
    drive(c, p, site, "recv", (src, Some(t.key.1)), |p| {
        if p.take_stashed(c, &mut t)? {
            return Ok(true);
        }
        p.progress(c, Some(&mut t));
        if let Some(e) = t.err.take() {
            return Err(e);
        }
        Ok(t.done || p.take_stashed(c, &mut t)?)
    })?;
    Ok(t.got)
}

/// `receive` without the wait (the caller has just moved what it could): whether the
/// message of receive `id` (bound to `t.key`) is here in full; the receive is over once
/// taken, or refused (a message that does not fit).
fn take_now(c: &ShmComm, p: &mut P2p, id: ReqId, t: &mut Target<'_>) -> Result<bool> {
    let taken = p.take_stashed(c, t);
    if !matches!(taken, Ok(false)) {
        p.recvs.remove(&id);
    }
    taken
}

pub(super) fn post_recv_any(c: &ShmComm, tag: u32) -> ReqId {
    let mut p = lock(c);
    let id = p.post_recv_any(c, tag);
    p.progress(c, None);
    id
}

/// Waits for a receive from any source: until a message binds it, then as a receive
/// from that source. Returns (source, bytes).
pub(super) fn wait_recv_any(
    c: &ShmComm,
    site: Site,
    id: ReqId,
    dtype: DType,
    buf: &mut [u8],
) -> Result<(usize, usize)> {
    let mut p = lock(c);
    if !p.recvs.contains_key(&id) && !p.any.iter().any(|&(a, _)| a == id) {
        return Err(Error::invalid("wait", "unknown receive request"));
    }
    let r = drive_any(c, &mut p, site, |p| {
        p.progress(c, None);
        Ok(p.recvs.contains_key(&id))
    });
    if let Err(e) = r {
        p.any.retain(|&(a, _)| a != id);
        return Err(e);
    }
    let key = p.recvs.remove(&id).expect("bound");
    let got = receive(c, &mut p, Target { key, dtype, buf, up_to: true, got: 0, done: false, err: None, site })?;
    Ok((key.0, got))
}

/// `wait_recv_any` without the wait: `Some((source, bytes))` once its message is here in full.
pub(super) fn test_recv_any(
    c: &ShmComm,
    site: Site,
    id: ReqId,
    dtype: DType,
    buf: &mut [u8],
) -> Result<Option<(usize, usize)>> {
    let mut p = lock(c);
    p.progress(c, None);
    let Some(&key) = p.recvs.get(&id) else {
        if p.any.iter().any(|&(a, _)| a == id) {
            return Ok(None);
        }
        return Err(Error::invalid("test", "unknown receive request"));
    };
    let mut t = Target { key, dtype, buf, up_to: true, got: 0, done: false, err: None, site };
    Ok(take_now(c, &mut p, id, &mut t)?.then_some((key.0, t.got)))
}

/// Drives progress until `done`, for a receive from any source: it waits on every rank
/// still running, any one of which may send (the deadlock detector's `ANY_PEER`: a
/// deadlock once every one of them is stuck itself); a failed peer is an error, and so is
/// every other rank having left.
fn drive_any(c: &ShmComm, p: &mut P2p, site: Site, mut done: impl FnMut(&mut P2p) -> Result<bool>) -> Result<()> {
    let started = Instant::now();
    let me = c.rank;
    let waiting = move || format!("rank {me} waits in recv_any from any rank ({site})");
    let any = crate::verify::deadlock::ANY_PEER;
    let ws = super::records::WaitState::new(crate::verify::watchdog::WAIT_RECV, any);
    let blocked = std::cell::Cell::new(false);
    let r = sync::wait_on(
        &c.bell(me),
        c.pace(),
        || done(p),
        || {
            let running: Vec<usize> = (0..c.n)
                .filter(|&r| {
                    r != me
                        && c.seg.u32_at(c.ctl(r) + super::segment::STATE).load(std::sync::atomic::Ordering::SeqCst)
                            != super::segment::FINISHED
                })
                .collect();
            if running.is_empty() && c.n > 1 {
                return Err(crate::verify::failure::peer_left(
                    (me + 1) % c.n,
                    c.name.clone(),
                    format!(
                        "every other rank of {} left ({}) while rank {me} still waits in recv_any at {}",
                        c.name,
                        crate::error::how_left(&c.name),
                        site.with_callers()
                    ),
                ));
            }
            c.health(&mut running.into_iter(), "recv_any", site, started, &waiting, &ws)
        },
        || {
            blocked.set(true);
            c.mark_wait(crate::verify::watchdog::WAIT_RECV, any, "recv_any", site);
        },
    );
    if blocked.get() {
        c.clear_wait();
    }
    crate::verify::deadlock::settle(r)
}

/// `wait_send` without the wait: moves what it can, then says whether the send is done.
pub(super) fn test_send(c: &ShmComm, id: ReqId) -> Result<bool> {
    let mut p = lock(c);
    if !p.send_dst.contains_key(&id) {
        return Err(Error::invalid("test", "unknown send request"));
    }
    p.progress(c, None);
    if p.done_sends.remove(&id) {
        p.send_dst.remove(&id);
        return Ok(true);
    }
    Ok(false)
}

/// `wait_recv` without the wait: moves what it can (into the stash), then takes the
/// message if it is here in full.
pub(super) fn test_recv(c: &ShmComm, site: Site, id: ReqId, dtype: DType, buf: &mut [u8]) -> Result<bool> {
    let mut p = lock(c);
    let key = *p.recvs.get(&id).ok_or_else(|| Error::invalid("test", "unknown receive request"))?;
    p.progress(c, None);
    take_now(c, &mut p, id, &mut Target { key, dtype, buf, up_to: false, got: 0, done: false, err: None, site })
}

/// Pushes out every buffered send (at communicator teardown), best effort.
/// The messages that reached this rank (in the stash, or streaming into it) and that no
/// posted receive claims, by sender, tag and call site: what will never be received once
/// this rank leaves.
pub(super) fn unreceived(c: &ShmComm) -> Vec<String> {
    let mut p = lock(c);
    p.progress(c, None);
    let claimed: HashSet<(usize, u32, u64)> = p.recvs.values().copied().collect();
    let mut by_site: std::collections::BTreeMap<(usize, u32, String, u32), (usize, u64)> = Default::default();
    for (key, s) in &p.stash {
        if !claimed.contains(key) {
            let e = by_site.entry((key.0, key.1, s.hdr.file(c, key.0), s.hdr.line)).or_default();
            e.0 += 1;
            e.1 += s.hdr.len;
        }
    }
    let mut lines: Vec<String> = by_site
        .into_iter()
        .map(|((src, tag, file, line), (n, bytes))| {
            format!(
                "rank {src} of {} sent {n} message{} with tag {tag} ({bytes} bytes) at {file}:{line} that rank {} \
                 never received",
                c.name,
                if n == 1 { "" } else { "s" },
                c.rank
            )
        })
        .collect();
    // What this rank sent to a peer that has already left without reading it (the peer
    // looked before these bytes came, so it could not report them).
    for dst in (0..c.n).filter(|&d| d != c.rank) {
        let left = c.seg.u32_at(c.ctl(dst) + super::segment::STATE).load(std::sync::atomic::Ordering::SeqCst)
            == super::segment::FINISHED;
        let queued: usize = p.out[dst].iter().map(|o| (o.base + o.data.bytes().len()).saturating_sub(o.off)).sum();
        let unread = Ring::new(c, c.rank, dst).avail() + queued;
        if left && unread > 0 {
            lines.push(format!(
                "rank {} of {} sent messages ({unread} bytes with their headers) to rank {dst}, which returned from its \
                 entry without receiving them",
                c.rank, c.name
            ));
        }
    }
    lines
}

pub(super) fn flush(c: &ShmComm) -> Result<()> {
    let mut p = lock(c);
    let Some(dst) = (0..c.n).find(|&d| !p.out[d].is_empty()) else { return Ok(()) };
    drive(c, &mut p, Site::caller(), "send", (dst, None), |p| {
        p.progress(c, None);
        Ok(p.out.iter().all(|q| q.is_empty()))
    })
}
