//! Single copy: a blocking send offers its buffer; the receiver claims the offer and
//! reads it with `process_vm_readv`, the sender writing the other half meanwhile (module
//! docs of `p2p`).

use super::*;

/// The receiver's side of a single-copy offer (module docs): claims offer `seq` of the
/// ring from `src` and reads the payload into `dst` (`None`: a receive that refused the
/// message drops it unread). Whether the payload was taken here; `false`: the sender
/// withdrew the offer, or this read failed (declined), and the payload follows in the
/// ring.
///
/// Both ends copy a message of two [`HELP_PIECE`]s or more: it is cut in pieces that the
/// receiver reads and its sender, waiting in its send meanwhile, writes into `dst`
/// (`process_vm_writev`; the receiver publishes `dst`'s address before it claims the
/// offer), each side taking the next piece with a fetch-add on the claim word, so two
/// cores copy where one did and a side that is not running leaves its share to the
/// other. The receiver does not return before every piece its sender took is written (or
/// the sender is gone): `dst` is lent to the sender until then. A sender whose write
/// fails says so; the receiver then reads the whole message itself.
pub(super) fn take_offer(c: &ShmComm, src: usize, seq: u32, dst: Option<&mut [u8]>) -> bool {
    let ring = Ring::new(c, src, c.rank);
    let word = |st: u64| (seq as u64) << 8 | st;
    let (n, _) = dst.as_deref().map_or((1, 0), |d| pieces(d.len()));
    if let Some(d) = dst.as_deref().filter(|_| n > 1) {
        ring.word(RECV_ADDR).store(d.as_ptr() as u64, Relaxed);
        ring.word(CLAIM).store((seq as u64) << 32, Relaxed);
    }
    if ring.offer.compare_exchange(word(OFFERED), word(TAKEN), AcqRel, Acquire).is_err() {
        return false;
    }
    let read = match dst {
        Some(dst) => {
            let (pid, addr) = (super::super::cma::pid(c, src), ring.offer_addr.load(Acquire));
            if n > 1 {
                if dst.len() >= WAKE_HELPER {
                    c.bell(src).ring();
                }
                read_pieces(&ring, seq, pid, addr, dst)
            } else {
                super::super::cma::read(pid, addr, dst).is_ok()
            }
        }
        None => true,
    };
    ring.offer.store(word(if read { DONE } else { DECLINED }), Release);
    c.bell(src).ring();
    read
}

/// Messages from this size on wake a sleeping sender to help copy them (a futex wake-up
/// costs microseconds on both sides; below this the receiver copies alone sooner).
pub(super) const WAKE_HELPER: usize = 256 << 10;

/// How an offered message of `len` bytes is cut for both ends to copy: (pieces, bytes
/// per piece); one piece below two [`HELP_PIECE`]s, else halves. More pieces measured
/// slower from 256 KiB and no faster at 64 KiB (2 ranks: docs/performance.md, "Figures
/// behind code choices"): every extra piece costs a system call and a claim bouncing
/// between the cores, more than a late side loses by leaving its half to the other.
pub(super) fn pieces(len: usize) -> (usize, usize) {
    if len < 2 * HELP_PIECE {
        return (1, len);
    }
    let piece = len.div_ceil(2).next_multiple_of(4096);
    (len.div_ceil(piece), piece)
}

/// The receiver's pieces of a message both ends copy ([`take_offer`]): reads each piece it
/// takes from the sender's buffer at `addr`, then waits for the pieces the sender took.
/// Whether all of `dst` holds the message.
pub(super) fn read_pieces(ring: &Ring<'_>, seq: u32, pid: u32, addr: u64, dst: &mut [u8]) -> bool {
    let (n, piece) = pieces(dst.len());
    let mut mine = 0;
    let mut ok = true;
    loop {
        let i = (ring.word(CLAIM).fetch_add(1, AcqRel) & 0xffff_ffff) as usize;
        if i >= n {
            break;
        }
        mine += 1;
        let (s, e) = (i * piece, dst.len().min((i + 1) * piece));
        ok = ok && super::super::cma::read(pid, addr + s as u64, &mut dst[s..e]).is_ok();
    }
    let theirs = (n - mine) as u64;
    if theirs == 0 {
        return ok;
    }
    // The sender is inside its writes (it took its pieces before we ran out). No
    // deadline (`sync::await_peer`): a sender stopped mid-copy holds this receive
    // until it continues or dies.
    let failed = sync::await_peer(pid, || {
        let h = ring.word(HELPED).load(Acquire);
        (h >> 32 == seq as u64 && h & (HELP_FAILED - 1) == theirs).then_some(h & HELP_FAILED != 0)
    });
    match failed {
        Some(true) => ok && super::super::cma::read(pid, addr, dst).is_ok(),
        Some(false) => ok,
        None => false,
    }
}

/// The sender's side of a message both ends copy ([`take_offer`]): writes the pieces it
/// takes into the receiver's buffer, while its send waits for the receiver. False when a
/// write failed (the receiver then reads the whole message, and this sender stops
/// helping that receiver).
pub(super) fn help(c: &ShmComm, dst: usize, seq: u32, data: &[u8]) -> bool {
    let (n, piece) = pieces(data.len());
    if n < 2 {
        return true;
    }
    let ring = Ring::new(c, c.rank, dst);
    let (pid, addr) = (super::super::cma::pid(c, dst), ring.word(RECV_ADDR).load(Acquire));
    let mut done = 0u64;
    loop {
        let w = ring.word(CLAIM).fetch_add(1, AcqRel);
        let i = (w & 0xffff_ffff) as usize;
        if w >> 32 != seq as u64 || i >= n {
            return true;
        }
        let (s, e) = (i * piece, data.len().min((i + 1) * piece));
        let ok = super::super::cma::write(pid, addr + s as u64, &data[s..e]).is_ok();
        sync::worked();
        done += 1;
        ring.word(HELPED).store((seq as u64) << 32 | done | if ok { 0 } else { HELP_FAILED }, Release);
        if !ok {
            return false;
        }
    }
}

/// A blocking send whose receiver reads the payload from `data` itself (module docs):
/// offers the buffer, sends the header alone, and waits until the receiver has read it
/// — or streams it through the ring after all, when the receiver declined, or when the
/// message fits the ring and nobody claimed it within [`WITHDRAW_AFTER`].
pub(super) fn send_offer(
    c: &ShmComm,
    p: &mut P2p,
    site: Site,
    dst: usize,
    mut hdr: [u8; HDR],
    data: &[u8],
    acked: impl Fn(&ShmComm) -> bool,
) -> Result<()> {
    let ring = Ring::new(c, c.rank, dst);
    p.offer_seq[dst] = p.offer_seq[dst].wrapping_add(1).max(1);
    let seq = p.offer_seq[dst];
    let word = |st: u64| (seq as u64) << 8 | st;
    ring.offer_addr.store(data.as_ptr() as u64, Relaxed);
    ring.offer.store(word(OFFERED), Release);
    hdr[OFFER_AT..OFFER_AT + 4].copy_from_slice(&seq.to_le_bytes());
    let id = enqueue(c, p, dst, hdr, &data[..0]);
    let may_withdraw = data.len() <= ring.cap;
    let started = Instant::now();
    let mut streamed: Option<ReqId> = None;
    let mut helped = false;
    let tag = u32::from_le_bytes(hdr[TAG_AT..TAG_AT + 4].try_into().expect("4 bytes"));
    let r = drive(c, p, site, "send", (dst, Some(tag)), |p| {
        // Done first: the receiver's next message may already be behind its DONE (a
        // ping-pong's reply), and moving it now would read it into the stash, where
        // the receive this rank is about to post would take it straight into its buffer.
        if streamed.is_none() && Ring::new(c, c.rank, dst).offer.load(Acquire) == word(DONE) && acked(c) {
            return Ok(true);
        }
        p.progress(c, None);
        if let Some(sid) = streamed {
            return Ok(p.done_sends.contains(&sid) && acked(c));
        }
        let ring = Ring::new(c, c.rank, dst);
        let mut st = ring.offer.load(Acquire);
        if st == word(TAKEN) && !helped && !p.help_off[dst] {
            // The receiver is copying: take a share of the pieces (`take_offer`).
            helped = true;
            if !help(c, dst, seq, data) {
                p.help_off[dst] = true;
            }
            st = ring.offer.load(Acquire);
        }
        let stream = if st == word(DONE) {
            return Ok(acked(c));
        } else if st == word(DECLINED) {
            p.offer_off[dst] = true;
            true
        } else {
            st == word(OFFERED)
                && may_withdraw
                && started.elapsed() >= WITHDRAW_AFTER
                && ring.offer.compare_exchange(word(OFFERED), word(WITHDRAWN), AcqRel, Acquire).is_ok()
        };
        if !stream {
            return Ok(false);
        }
        // The payload follows its header in the ring, as an ordinary send's does.
        let sid = p.next_id;
        p.next_id += 1;
        p.out[dst].push_back(Out {
            id: sid,
            hdr,
            data: Payload::Borrowed(data.as_ptr(), data.len()),
            off: OFFER_BODY,
            base: OFFER_BODY,
        });
        streamed = Some(sid);
        p.progress(c, None);
        Ok(p.done_sends.contains(&sid) && acked(c))
    });
    if r.is_err() {
        take_back(c, p, dst, seq, (id, streamed), hdr, data);
    }
    p.done_sends.remove(&id);
    p.send_dst.remove(&id);
    if let Some(sid) = streamed {
        p.done_sends.remove(&sid);
    }
    r
}

/// After a failed offer of `data` to `dst` (offer number `seq`; `sent`: the header's
/// request and the streamed payload's, if any): takes the buffer back before the caller
/// may reuse it, and leaves the stream to `dst` whole.
fn take_back(
    c: &ShmComm,
    p: &mut P2p,
    dst: usize,
    seq: u32,
    sent: (ReqId, Option<ReqId>),
    hdr: [u8; HDR],
    data: &[u8],
) {
    let (id, streamed) = sent;
    let ring = Ring::new(c, c.rank, dst);
    let word = |st: u64| (seq as u64) << 8 | st;
    // Take the buffer back before the caller may reuse it: withdraw the offer, or
    // let a read already under way finish — however long it takes (a message of
    // any size may be on offer), unless the reader's process is gone.
    if ring.offer.compare_exchange(word(OFFERED), word(WITHDRAWN), AcqRel, Acquire).is_err() {
        // No deadline (`sync::await_peer`): a reader stopped mid-read holds the send.
        let reader = super::super::cma::pid(c, dst);
        sync::await_peer(reader, || (ring.offer.load(Acquire) != word(TAKEN)).then_some(()));
    }
    // A header still queued goes unsent, and so does a payload queued after it. A
    // header in the ring was seen, or will be, by a receiver that finds the offer
    // withdrawn or declined (unless it read the payload: DONE) and then reads the
    // payload from the ring: that follows, from a copy, so the stream stays whole
    // (not to a reader that died holding the offer).
    let header_unsent = p.out[dst].iter().any(|o| o.id == id);
    let st = ring.offer.load(Acquire);
    if st == word(DECLINED) {
        p.offer_off[dst] = true;
    }
    p.abandon(dst, id, false);
    match streamed {
        Some(sid) if header_unsent => p.out[dst].retain(|o| o.id != sid),
        Some(sid) => p.abandon(dst, sid, true),
        None if !header_unsent && (st == word(WITHDRAWN) || st == word(DECLINED)) => {
            p.copied[dst] += data.len() as u64;
            p.out[dst].push_back(Out {
                id: 0,
                hdr,
                data: Payload::Owned(data.to_vec()),
                off: OFFER_BODY,
                base: OFFER_BODY,
            });
        }
        None => {}
    }
    p.note_pending(c);
}
