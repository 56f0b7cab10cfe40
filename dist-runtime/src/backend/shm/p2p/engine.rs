//! The matching engine: posted receives and sends, the stash of messages that arrived
//! before their receive, and progress (`P2p::progress`: taking headers and payloads off
//! the rings into the receive being waited on, a stash, or a posted buffer).

use super::*;

pub(super) enum Payload {
    /// Valid only inside the blocking call that lent it (see module docs).
    Borrowed(*const u8, usize),
    Owned(Vec<u8>),
}

// SAFETY: a Borrowed payload is only created and consumed within one call on one thread.
unsafe impl Send for Payload {}

impl Payload {
    pub(super) fn bytes(&self) -> &[u8] {
        match self {
            // SAFETY: see the enum's contract.
            Payload::Borrowed(p, n) => unsafe { std::slice::from_raw_parts(*p, *n) },
            Payload::Owned(v) => v,
        }
    }
}

pub(super) struct Out {
    pub(super) id: ReqId,
    pub(super) hdr: [u8; HDR],
    /// The payload from stream offset `base` on (an owned tail keeps only what is left).
    pub(super) data: Payload,
    /// Bytes of header + payload written so far.
    pub(super) off: usize,
    /// Stream offset of `data[0]` (HDR, or later for an owned tail).
    pub(super) base: usize,
}

/// Where the payload of the message being read from a source goes.
pub(super) enum Sink {
    Stash,
    /// Straight into the buffer of the receive waiting for this key.
    Target((usize, u32, u64)),
    /// A receive whose buffer did not fit: the bytes are read and dropped.
    Discard,
}

pub(super) struct Incoming {
    pub(super) hdr: Header,
    pub(super) key: (usize, u32, u64),
    pub(super) got: usize,
    pub(super) sink: Sink,
    /// Published whole with its header ([`WHOLE`]): read in place, released at once
    /// at the end (header, payload and padding).
    pub(super) whole: bool,
    /// Padding after the payload, skipped once it is read.
    pub(super) pad: usize,
}

pub(super) struct Stashed {
    pub(super) hdr: Header,
    pub(super) data: Vec<u8>,
    pub(super) complete: bool,
    /// Whether it counts against the stash limit (no receive had claimed it).
    pub(super) unexpected: bool,
    /// Arrival order among every source's messages (what `recv_any` takes first).
    pub(super) seq: u64,
}

/// The receive a `wait` is driving, which may take its message straight from the ring.
pub(super) struct Target<'a> {
    pub(super) key: (usize, u32, u64),
    pub(super) dtype: DType,
    pub(super) buf: &'a mut [u8],
    /// A receive from any source takes a message of up to `buf.len()` bytes (else: exactly).
    pub(super) up_to: bool,
    /// Bytes the message had, once done.
    pub(super) got: usize,
    pub(super) done: bool,
    pub(super) err: Option<Error>,
    /// The receive's call site (the user's line), for its errors.
    pub(super) site: Site,
}

pub(in crate::backend::shm) struct P2p {
    pub(super) next_id: ReqId,
    pub(super) out: Vec<VecDeque<Out>>,
    /// Bytes of the copies (`isend` data that did not fit the ring at once) held in
    /// `out`, per destination: bounded by `Config::isend_limit`.
    pub(super) copied: Vec<u64>,
    pub(super) done_sends: HashSet<ReqId>,
    pub(super) send_dst: HashMap<ReqId, usize>,
    pub(super) cur: Vec<Option<Incoming>>,
    pub(super) posted: HashMap<(usize, u32), u64>,
    pub(super) arrived: HashMap<(usize, u32), u64>,
    pub(super) stash: HashMap<(usize, u32, u64), Stashed>,
    pub(super) recvs: HashMap<ReqId, (usize, u32, u64)>,
    /// The last rendezvous id used towards each destination.
    pub(super) sync_ids: Vec<u32>,
    /// Messages sent so far per (destination, tag): the next one's place in its
    /// receiver's matching order.
    pub(super) sent: HashMap<(usize, u32), u64>,
    /// Bytes of stashed messages that no receive had claimed when they came (bounded by
    /// `Config::stash_limit`: past it, unexpected messages stay in their rings and their
    /// senders wait, instead of this rank's memory growing without end).
    pub(super) unexpected: u64,
    /// Receives from any source not yet bound to a message, in posting order, by tag.
    pub(super) any: VecDeque<(ReqId, u32)>,
    /// Messages stashed so far (their arrival order).
    pub(super) seq: u64,
    /// The last single-copy offer's sequence number towards each destination.
    pub(super) offer_seq: Vec<u32>,
    /// Destinations that declined an offer (their reads fail): no more offers to them.
    pub(super) offer_off: Vec<bool>,
    /// Destinations this rank failed to write into: it no longer helps them copy.
    pub(super) help_off: Vec<bool>,
    /// The tail of the ring to each destination as last read: the writer reads the
    /// receiver's tail again only when this leaves too little room.
    pub(super) tails: Vec<u64>,
    /// This rank's table of the files it sent from (`Header::file`): by the address and
    /// length of the `&'static str`, 1 + its entry.
    pub(super) sites: HashMap<(usize, usize), u16>,
}

impl P2p {
    pub(in crate::backend::shm) fn new(n: usize) -> P2p {
        P2p {
            next_id: 1,
            out: (0..n).map(|_| VecDeque::new()).collect(),
            copied: vec![0; n],
            done_sends: HashSet::default(),
            send_dst: HashMap::default(),
            cur: (0..n).map(|_| None).collect(),
            posted: HashMap::default(),
            arrived: HashMap::default(),
            stash: HashMap::default(),
            recvs: HashMap::default(),
            sync_ids: vec![0; n],
            sent: HashMap::default(),
            unexpected: 0,
            any: VecDeque::new(),
            seq: 0,
            offer_seq: vec![0; n],
            offer_off: vec![false; n],
            help_off: vec![false; n],
            tails: vec![0; n],
            sites: HashMap::default(),
        }
    }

    /// Takes back the caller's buffer from send `id` to `dst` after the send failed
    /// (deadline, a peer gone): a message nothing of which is in the ring yet is dropped;
    /// one that started (or, with `started`, one whose header is in the ring) goes on
    /// from a copy of what is left, tracked by no request, so the ring's stream stays in
    /// step for whoever reads it next.
    pub(super) fn abandon(&mut self, dst: usize, id: ReqId, started: bool) {
        let Some(at) = self.out[dst].iter().position(|o| o.id == id) else { return };
        let o = &mut self.out[dst][at];
        if !started && o.off == 0 {
            // Never sent: it no longer counts in its tag's order (`enqueue`).
            let tag = u32::from_le_bytes(o.hdr[TAG_AT..TAG_AT + 4].try_into().expect("4 bytes"));
            if let Some(k) = self.sent.get_mut(&(dst, tag)) {
                *k -= 1;
            }
            self.out[dst].remove(at);
            return;
        }
        if let Payload::Borrowed(..) = o.data {
            let rest = o.data.bytes()[o.off.saturating_sub(o.base)..].to_vec();
            self.copied[dst] += rest.len() as u64;
            o.base = o.off.max(o.base);
            o.data = Payload::Owned(rest);
        }
        o.id = 0;
    }

    /// The header of a message from `site`, its file entered in this rank's table of
    /// files when it is not there yet (0 once the table is full).
    pub(super) fn header(
        &mut self,
        c: &ShmComm,
        tag: u32,
        dtype: DType,
        len: usize,
        site: Site,
        sync: u32,
    ) -> [u8; HDR] {
        let f = site.0.file();
        let next = self.sites.len();
        let file = match self.sites.get(&(f.as_ptr() as usize, f.len())) {
            Some(&i) => i,
            None if next < SITES => {
                let keep = &f.as_bytes()[f.len().saturating_sub(SITE_LEN - 1)..];
                let at = c.seg.layout.site(c.rank, next);
                // SAFETY: entry `next` of this rank's own table, written by this rank
                // alone (under the p2p lock) and only once; readers look at it only
                // after a header naming it is published.
                unsafe {
                    *c.seg.ptr(at) = keep.len() as u8;
                    std::ptr::copy_nonoverlapping(keep.as_ptr(), c.seg.ptr(at + 1), keep.len());
                }
                self.sites.insert((f.as_ptr() as usize, f.len()), next as u16 + 1);
                next as u16 + 1
            }
            None => 0,
        };
        Header::encode(tag, dtype, len, file, site.0.line(), sync)
    }

    /// Posts a receive from any source with `tag`: it takes the earliest-arrived message
    /// with that tag that no receive claims (now, from the stash, or as one arrives).
    pub(super) fn post_recv_any(&mut self, c: &ShmComm, tag: u32) -> ReqId {
        let id = self.next_id;
        self.next_id += 1;
        let claimed: HashSet<(usize, u32, u64)> = self.recvs.values().copied().collect();
        let first = self
            .stash
            .iter()
            .filter(|(k, _)| k.1 == tag && !claimed.contains(k))
            .min_by_key(|(_, s)| s.seq)
            .map(|(k, _)| *k);
        match first {
            Some(key) => self.bind(c, id, key),
            None => self.any.push_back((id, tag)),
        }
        id
    }

    /// Gives the message `key` to the receive `id` (from any source), as a receive posted
    /// for its source now would get it.
    pub(super) fn bind(&mut self, c: &ShmComm, id: ReqId, key: (usize, u32, u64)) {
        let (src, tag, ord) = key;
        let next = self.posted.entry((src, tag)).or_insert(0);
        debug_assert_eq!(*next, ord, "a source's messages are taken in the order they were sent");
        *next = ord + 1;
        self.recvs.insert(id, key);
        Ring::new(c, src, c.rank).publish_posted(tag, ord + 1);
        if let Some(s) = self.stash.get(&key) {
            ack(c, src, s.hdr.tag, s.hdr.sync);
        }
    }

    pub(in crate::backend::shm) fn post_recv(&mut self, c: &ShmComm, src: usize, tag: u32) -> ReqId {
        let ord = self.posted.entry((src, tag)).or_insert(0);
        let key = (src, tag, *ord);
        *ord += 1;
        let id = self.next_id;
        self.next_id += 1;
        self.recvs.insert(id, key);
        Ring::new(c, src, c.rank).publish_posted(tag, *ord);
        // A blocking send that arrived first waits for this receive: release it.
        if let Some(s) = self.stash.get(&key) {
            ack(c, src, s.hdr.tag, s.hdr.sync);
        }
        id
    }

    /// Moves bytes on every ring this rank touches; never blocks.
    pub(super) fn progress(&mut self, c: &ShmComm, mut target: Option<&mut Target<'_>>) {
        for dst in 0..c.n {
            self.send_out(c, dst);
        }
        for src in 0..c.n {
            self.take_in(c, src, &mut target);
        }
        self.note_pending(c);
    }

    /// Writes what waits for `dst` into its ring, as far as the ring has room: a small
    /// message whole, a larger one as its header, then pieces the reader copies out while
    /// the next ones go in.
    fn send_out(&mut self, c: &ShmComm, dst: usize) {
        let me = c.rank;
        while let Some(front) = self.out[dst].front_mut() {
            let ring = Ring::new(c, me, dst);
            let total = front.base + front.data.bytes().len();
            // The message ends on a line boundary: the padding goes out with its last bytes.
            let end = lines(total);
            loop {
                let len = front.data.bytes().len();
                let whole = front.off == 0 && front.base == HDR && len <= PIECE;
                // What the next write needs; the tail is read again only when the
                // last one seen leaves less free (it is the receiver's line).
                let want = if whole {
                    end
                } else if front.off < HDR {
                    if total == HDR {
                        end
                    } else {
                        HDR
                    }
                } else {
                    (end - front.off).min(PIECE)
                };
                let free = ring.free_seen(&mut self.tails[dst], want);
                if whole && free >= end {
                    // A small message whole: header, payload and padding published at
                    // once (one head store and one doorbell, each a fence, not two).
                    // (One that does not fit now goes as a header, then pieces.)
                    ring.write_msg(&front.hdr, WHOLE, front.data.bytes(), end);
                    front.off = end;
                    break;
                }
                if front.off < HDR {
                    // The header alone (the payload follows in pieces, or, for an
                    // offer, is read from the sender's memory): with its padding when
                    // no payload follows in this message.
                    let adv = if total == HDR { end } else { HDR };
                    if free < adv {
                        break;
                    }
                    ring.write_msg(&front.hdr, 0, &[], adv);
                    front.off = adv;
                    continue;
                }
                if front.off >= total {
                    break;
                }
                // Publish in pieces so the reader starts copying out while we copy in;
                // the last one carries the padding.
                let rem = total - front.off;
                let pad = end - total;
                let mut k = rem.min(PIECE).min(free);
                let mut adv = k;
                if k == rem {
                    if free >= k + pad {
                        adv = k + pad;
                    } else {
                        k = free.saturating_sub(pad);
                        adv = k;
                    }
                }
                if k == 0 {
                    break;
                }
                let at = front.off - front.base;
                ring.write_bytes(&front.data.bytes()[at..at + k], adv);
                front.off += adv;
            }
            if front.off >= end {
                let done = self.out[dst].pop_front().expect("front exists");
                if let Payload::Owned(v) = &done.data {
                    self.copied[dst] -= v.len() as u64;
                }
                if done.id != 0 {
                    self.done_sends.insert(done.id);
                }
            } else {
                break;
            }
        }
    }

    /// Reads what `src`'s ring holds for this rank: each message into the waiting
    /// receive (`target`) that it is for, or the stash.
    fn take_in(&mut self, c: &ShmComm, src: usize, target: &mut Option<&mut Target<'_>>) {
        let ring = Ring::new(c, src, c.rank);
        loop {
            if self.cur[src].is_none() && !self.start_incoming(c, src, &ring, target) {
                break;
            }
            let inc = self.cur[src].as_mut().expect("set above");
            let len = inc.hdr.len as usize;
            let k = if inc.whole { len - inc.got } else { ring.avail().min(len - inc.got).min(PIECE) };
            if let Sink::Target(key) = inc.sink {
                // The receive that took this message gave up (it returned an error):
                // drop the rest so the stream stays in step.
                if target.as_deref().is_none_or(|t| t.key != key) {
                    inc.sink = Sink::Discard;
                }
            }
            if k > 0 {
                // A whole message is read in place (released at its end), a streamed
                // one as it comes.
                let (whole, got) = (inc.whole, inc.got);
                let take = |dst: &mut [u8]| if whole { ring.peek_at(HDR + got, dst) } else { ring.read(dst) };
                match inc.sink {
                    Sink::Target(_) => {
                        let t = target.as_deref_mut().expect("checked above");
                        take(&mut t.buf[got..got + k]);
                    }
                    Sink::Stash => {
                        let s = self.stash.get_mut(&inc.key).expect("stash entry");
                        s.data.resize(got + k, 0);
                        take(&mut s.data[got..]);
                    }
                    Sink::Discard if !whole => ring.skip(k),
                    Sink::Discard => {}
                }
                inc.got += k;
            }
            if inc.got < len {
                if k == PIECE {
                    continue; // more may be there: keep draining
                }
                break;
            }
            let inc = self.cur[src].take().expect("set above");
            if inc.whole {
                ring.skip(HDR + len + inc.pad);
            } else if inc.pad > 0 && inc.got == len {
                // Published with the payload's last bytes.
                ring.skip(inc.pad);
            }
            match inc.sink {
                Sink::Target(_) => {
                    let t = target.as_deref_mut().expect("checked above");
                    t.done = true;
                    t.got = len;
                }
                Sink::Stash => self.stash.get_mut(&inc.key).expect("stash entry").complete = true,
                Sink::Discard => {}
            }
        }
    }

    /// A new message's header from `src`'s ring: matched to the waiting receive or a
    /// posted one (the first receive from any source for its tag takes it), or stashed;
    /// a single-copy offer read at once. `false` when nothing can start now (no header
    /// yet, or the stash is full: back-pressure leaves it in the ring).
    fn start_incoming(
        &mut self,
        c: &ShmComm,
        src: usize,
        ring: &Ring<'_>,
        target: &mut Option<&mut Target<'_>>,
    ) -> bool {
        if !ring.header_ready() {
            return false;
        }
        let mut h = [0u8; HDR];
        ring.peek(&mut h);
        let hdr = Header::decode(&h);
        let offer = hdr.offer;
        let ord = self.arrived.get(&(src, hdr.tag)).copied().unwrap_or(0);
        let key = (src, hdr.tag, ord);
        let mut claimed = target.as_deref().is_some_and(|t| t.key == key) || self.recvs.values().any(|k| *k == key);
        if !claimed {
            // The first receive from any source waiting for this tag takes it.
            if let Some(i) = self.any.iter().position(|&(_, t)| t == hdr.tag) {
                let (id, _) = self.any.remove(i).expect("found");
                self.bind(c, id, key);
                claimed = true;
            }
        }
        if !claimed && self.unexpected >= c.cfg.stash_limit {
            // Back-pressure: leave it (and what follows it) in the ring.
            return false;
        }
        if !claimed {
            self.unexpected += hdr.len;
        }
        let whole = hdr.flags & WHOLE != 0 && offer == 0;
        let len = hdr.len as usize;
        let pad = if offer != 0 { lines(len) - len } else { lines(HDR + len) - HDR - len };
        if offer != 0 {
            // The header's line (published with it); a payload that follows
            // in the ring after all starts on the next one.
            ring.skip(OFFER_BODY);
        } else if !whole {
            ring.skip(HDR);
        }
        *self.arrived.entry((src, hdr.tag)).or_insert(0) += 1;
        if hdr.sync != 0 && claimed {
            ack(c, src, hdr.tag, hdr.sync);
        }
        let sink = match target.as_deref_mut() {
            Some(t) if t.key == key => match check_fit(c, t, &hdr) {
                Ok(()) => Sink::Target(key),
                Err(e) => {
                    t.err = Some(e);
                    Sink::Discard
                }
            },
            _ => {
                self.stash.insert(
                    key,
                    Stashed {
                        data: Vec::with_capacity(hdr.len as usize),
                        hdr,
                        complete: false,
                        unexpected: !claimed,
                        seq: self.seq,
                    },
                );
                self.seq += 1;
                Sink::Stash
            }
        };
        self.cur[src] = Some(Incoming { hdr, key, got: 0, sink, whole, pad });
        if offer != 0 {
            let inc = self.cur[src].as_mut().expect("set above");
            let len = inc.hdr.len as usize;
            let read = match inc.sink {
                Sink::Target(_) => {
                    let t = target.as_deref_mut().expect("the waiting receive took it");
                    take_offer(c, src, offer, Some(&mut t.buf[..len]))
                }
                Sink::Stash => {
                    let s = self.stash.get_mut(&inc.key).expect("stash entry");
                    s.data.resize(len, 0);
                    let read = take_offer(c, src, offer, Some(&mut s.data[..]));
                    if !read {
                        s.data.clear();
                    }
                    read
                }
                Sink::Discard => take_offer(c, src, offer, None),
            };
            if read {
                // Nothing of it follows in the ring (no padding either).
                inc.got = len;
                inc.pad = 0;
            }
        }
        true
    }

    /// Says whether bytes wait in this rank's queues (`ShmComm::pending_out`).
    pub(super) fn note_pending(&self, c: &ShmComm) {
        c.pending_out.store(self.out.iter().any(|q| !q.is_empty()), Relaxed);
    }

    /// Takes the target's message from the stash if it is there in full.
    pub(super) fn take_stashed(&mut self, c: &ShmComm, t: &mut Target<'_>) -> Result<bool> {
        match self.stash.get(&t.key) {
            Some(s) if s.complete => {
                let s = self.stash.remove(&t.key).expect("present");
                if s.unexpected {
                    self.unexpected -= s.hdr.len;
                }
                check_fit(c, t, &s.hdr)?;
                super::super::copy::copy_slice(&mut t.buf[..s.data.len()], &s.data);
                t.got = s.data.len();
                t.done = true;
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}

pub(super) fn check_fit(c: &ShmComm, t: &Target<'_>, hdr: &Header) -> Result<()> {
    let (src, tag, _) = t.key;
    let sent = DType::from_u8(hdr.dtype);
    let fits = if t.up_to { hdr.len as usize <= t.buf.len() } else { hdr.len as usize == t.buf.len() };
    if hdr.dtype != t.dtype as u8 || !fits {
        let es = t.dtype.size();
        if t.up_to {
            return Err(Error::InvalidArgument {
                op: "recv_any",
                site: t.site,
                msg: format!(
                    "rank {} receives up to {} × {} with tag {tag} from any rank on {}, and got the message rank {src} \
                     sent ({}, {}:{}); a receive from any source takes a message of its element \
                     type no longer than its buffer",
                    c.rank,
                    t.buf.len() / es,
                    t.dtype,
                    c.name,
                    crate::dtype::sent_as(sent, hdr.len as usize),
                    hdr.file(c, src),
                    hdr.line
                ),
            });
        }
        return Err(Error::InvalidArgument {
            op: crate::error::user_op("recv"),
            site: t.site,
            msg: format!(
                "rank {} receives {} × {} with tag {tag} from rank {src} on {}, but rank {src} sent {} \
                 ({}:{}); the receive buffer must match the message exactly",
                c.rank,
                t.buf.len() / es,
                t.dtype,
                c.name,
                crate::dtype::sent_as(sent, hdr.len as usize),
                hdr.file(c, src),
                hdr.line
            ),
        });
    }
    Ok(())
}
