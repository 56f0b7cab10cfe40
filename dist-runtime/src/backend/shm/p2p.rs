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
//! ring's copy in and copy out at every size measured, 2 MiB to 64 MiB: 16 MiB at 2
//! ranks 0.73 ms against 1.39 through the ring).
//!
//! Soundness: the engine never keeps a pointer into a user buffer past the call that
//! lent it (an offer's address is read only while its blocking send waits for it, and a
//! receive's buffer is written by its sender only while the receive waits for those
//! writes). A non-blocking send copies whatever it can't hand over at once; a
//! non-blocking receive lands in the stash unless its own `wait` is running. So a
//! handle that is leaked (`mem::forget`) can leak memory but never corrupt it.

use super::segment::{RING_CTL, SITES, SITE_LEN};
use super::{sync, ShmComm};
use crate::backend::ReqId;
use crate::dtype::DType;
use crate::error::{Error, Result, Site};
use std::collections::VecDeque;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
use std::time::Instant;

/// The engine's maps, keyed by ranks, tags, sequence numbers and request ids: integers
/// the program itself chooses, so SipHash's resistance to chosen keys buys nothing, and
/// it cost ~6% of an 8-byte ping-pong's profile (several lookups per message).
type HashMap<K, V> = std::collections::HashMap<K, V, std::hash::BuildHasherDefault<Fx>>;
type HashSet<K> = std::collections::HashSet<K, std::hash::BuildHasherDefault<Fx>>;

/// A multiply-rotate hash of integer words (rustc's FxHasher).
#[derive(Default, Clone, Copy)]
pub(super) struct Fx(u64);

impl Fx {
    #[inline]
    fn add(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl std::hash::Hasher for Fx {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for c in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
    }
    #[inline]
    fn write_u32(&mut self, x: u32) {
        self.add(x as u64);
    }
    #[inline]
    fn write_u64(&mut self, x: u64) {
        self.add(x);
    }
    #[inline]
    fn write_usize(&mut self, x: usize) {
        self.add(x as u64);
    }
}

/// Bytes of a message header (layout at [`Header::encode`]). Every message starts on a
/// cache line of the ring, and a payload of up to `LINE - HDR` bytes shares the
/// header's line, so a small message is one line to write and one to read.
const HDR: usize = 40;
/// Ring bytes are laid out by cache lines: each message (header, payload, padding) takes
/// a whole number of them.
const LINE: usize = 64;
/// Where the payload of an offered message starts when it follows in the ring after all
/// (the header's line holds the header alone).
const OFFER_BODY: usize = LINE;
/// Largest copy into or out of a ring before publishing it.
const PIECE: usize = 64 << 10;
/// Header bytes: the mark (a word the writer stores last, see [`mark`]), tag, dtype,
/// flags, the sender's file (an index into its table of files), length, line,
/// rendezvous id, offer.
const TAG_AT: usize = 8;
const DTYPE_AT: usize = 12;
const FLAGS_AT: usize = 13;
const FILE_AT: usize = 14;
const LEN_AT: usize = 16;
const LINE_AT: usize = 24;
/// Where a header keeps the rendezvous id of a blocking send (0: none).
const SYNC_AT: usize = 28;
/// Header bytes holding an offer's sequence number (0: the payload follows the header).
const OFFER_AT: usize = 32;
/// Header flag: the payload and padding were published with the header, so a reader
/// that sees the header may take the whole message without looking at the ring's head.
const WHOLE: u8 = 1;
/// The mark of a header at stream position `pos`: a reader at `pos` knows a header was
/// published there once the first word of the line holds it. Stale bytes at that place
/// in the ring (an earlier pass's header, whose position differed by a multiple of the
/// ring's size, or payload) hold it only by a 2⁻⁶⁴ chance: the salt keeps small
/// integers in a payload from being taken for one.
fn mark(pos: u64) -> u64 {
    (pos + 1) ^ 0x6469_7374_6d73_6721
}
/// `x` rounded up to whole lines.
fn lines(x: usize) -> usize {
    x.next_multiple_of(LINE)
}
/// Offset, in a ring's control block, of the word where the receiver acknowledges a
/// blocking send: it stores the send's rendezvous id once a receive for it is posted.
const ACK: usize = 96;
/// Offset, in a ring's control block, of the receiver's table of posted receives from
/// the ring's sender: `POSTED_SLOTS` words of `tag << 32 | count`, where count is how
/// many receives for that tag it has posted (0: an empty slot). A blocking send whose
/// message is the k-th on its tag is matched once count > k, whether or not the
/// receiver has read it yet (it may be waiting in a collective meanwhile). Tags beyond
/// the table's room fall back on the acknowledgement the receiver sends when it reads
/// the message.
const POSTED: usize = 128;
const POSTED_SLOTS: usize = 16;
/// Offset, in a ring's control block, of the sender's single-copy offer:
/// `seq << 8 | state` (see the module docs), and at `OFFER_ADDR` the address of the
/// offered buffer in the sender's memory.
const OFFER: usize = 104;
const OFFER_ADDR: usize = 112;
const OFFERED: u64 = 1;
const TAKEN: u64 = 2;
const DONE: u64 = 3;
const WITHDRAWN: u64 = 4;
const DECLINED: u64 = 5;
/// Offsets, in a ring's control block, of the words by which a sender helps its receiver
/// copy an offered message (both ends copying at once, see [`take_offer`]): the
/// receiver's destination address (written by the receiver before it claims the offer),
/// the next piece to copy (`seq << 32 | index`, taken by either side with a fetch-add),
/// and the pieces the sender has written (`seq << 32 | count`; [`HELP_FAILED`] in the
/// count: one of its writes failed). On a cache line of their own.
const RECV_ADDR: usize = 256;
const CLAIM: usize = 264;
const HELPED: usize = 272;
const HELP_FAILED: u64 = 1 << 31;
/// Smallest piece of an offered message that either side copies on its own: below two
/// of these the receiver reads the message alone (a second `process_vm_*` call and the
/// handshake would cost more than half a copy saves).
const HELP_PIECE: usize = 32 << 10;
const _: () = assert!(
    LINE_AT + 4 <= SYNC_AT
        && SYNC_AT + 4 <= OFFER_AT
        && OFFER_AT + 4 <= HDR
        && HDR <= LINE
        && ACK + 4 <= OFFER
        && OFFER_ADDR + 8 <= POSTED
        && POSTED + 8 * POSTED_SLOTS <= RECV_ADDR
        && HELPED + 8 <= RING_CTL
);
/// How long a send that fits the ring leaves its buffer on offer before it streams it
/// instead: a receiver already waiting claims it within microseconds; one that is busy
/// elsewhere would make the send wait for it, which an eager send never does.
const WITHDRAW_AFTER: std::time::Duration = std::time::Duration::from_micros(40);

#[derive(Clone, Copy)]
struct Header {
    tag: u32,
    dtype: u8,
    flags: u8,
    len: u64,
    line: u32,
    /// The sender's file: 1 + its index in the sender's table of files (0: not in the
    /// table; read with [`Header::file`]).
    file: u16,
    /// The rendezvous id of a blocking send in rendezvous mode, which waits for the
    /// receiver's acknowledgement.
    sync: u32,
    /// The sequence number of a single-copy offer (0: the payload follows the header).
    offer: u32,
}

impl Header {
    /// Bytes [0, 8) are the mark, written by the ring when it publishes the header.
    fn encode(tag: u32, dtype: DType, len: usize, file: u16, line: u32, sync: u32) -> [u8; HDR] {
        let mut h = [0u8; HDR];
        h[TAG_AT..TAG_AT + 4].copy_from_slice(&tag.to_le_bytes());
        h[DTYPE_AT] = dtype as u8;
        h[FILE_AT..FILE_AT + 2].copy_from_slice(&file.to_le_bytes());
        h[LEN_AT..LEN_AT + 8].copy_from_slice(&(len as u64).to_le_bytes());
        h[LINE_AT..LINE_AT + 4].copy_from_slice(&line.to_le_bytes());
        h[SYNC_AT..SYNC_AT + 4].copy_from_slice(&sync.to_le_bytes());
        h
    }
    fn decode(h: &[u8; HDR]) -> Header {
        let u32_at = |at: usize| u32::from_le_bytes(h[at..at + 4].try_into().expect("4 bytes"));
        Header {
            tag: u32_at(TAG_AT),
            dtype: h[DTYPE_AT],
            flags: h[FLAGS_AT],
            len: u64::from_le_bytes(h[LEN_AT..LEN_AT + 8].try_into().expect("8 bytes")),
            line: u32_at(LINE_AT),
            file: u16::from_le_bytes([h[FILE_AT], h[FILE_AT + 1]]),
            sync: u32_at(SYNC_AT),
            offer: u32_at(OFFER_AT),
        }
    }
    /// The sender's (`src`'s) source file, from its table (for messages naming its call
    /// site).
    fn file(&self, c: &ShmComm, src: usize) -> String {
        if self.file == 0 || self.file as usize > SITES {
            return format!("(one of the files past the first {SITES} that rank {src} sent from)");
        }
        let at = c.seg.layout.site(src, self.file as usize - 1);
        // SAFETY: the table entry was written before the header naming it was published
        // (Release on the mark, Acquire when reading it), and is never written again.
        let entry = unsafe { std::slice::from_raw_parts(c.seg.ptr(at) as *const u8, SITE_LEN) };
        let n = (entry[0] as usize).min(SITE_LEN - 1);
        String::from_utf8_lossy(&entry[1..1 + n]).into_owned()
    }
}

enum Payload {
    /// Valid only inside the blocking call that lent it (see module docs).
    Borrowed(*const u8, usize),
    Owned(Vec<u8>),
}

// SAFETY: a Borrowed payload is only created and consumed within one call on one thread.
unsafe impl Send for Payload {}

impl Payload {
    fn bytes(&self) -> &[u8] {
        match self {
            // SAFETY: see the enum's contract.
            Payload::Borrowed(p, n) => unsafe { std::slice::from_raw_parts(*p, *n) },
            Payload::Owned(v) => v,
        }
    }
}

struct Out {
    id: ReqId,
    hdr: [u8; HDR],
    /// The payload from stream offset `base` on (an owned tail keeps only what is left).
    data: Payload,
    /// Bytes of header + payload written so far.
    off: usize,
    /// Stream offset of `data[0]` (HDR, or later for an owned tail).
    base: usize,
}

/// Where the payload of the message being read from a source goes.
enum Sink {
    Stash,
    /// Straight into the buffer of the receive waiting for this key.
    Target((usize, u32, u64)),
    /// A receive whose buffer did not fit: the bytes are read and dropped.
    Discard,
}

struct Incoming {
    hdr: Header,
    key: (usize, u32, u64),
    got: usize,
    sink: Sink,
    /// Published whole with its header ([`WHOLE`]): read in place, released at once
    /// at the end (header, payload and padding).
    whole: bool,
    /// Padding after the payload, skipped once it is read.
    pad: usize,
}

struct Stashed {
    hdr: Header,
    data: Vec<u8>,
    complete: bool,
    /// Whether it counts against the stash limit (no receive had claimed it).
    unexpected: bool,
    /// Arrival order among every source's messages (what `recv_any` takes first).
    seq: u64,
}

/// The receive a `wait` is driving, which may take its message straight from the ring.
struct Target<'a> {
    key: (usize, u32, u64),
    dtype: DType,
    buf: &'a mut [u8],
    /// A receive from any source takes a message of up to `buf.len()` bytes (else: exactly).
    up_to: bool,
    /// Bytes the message had, once done.
    got: usize,
    done: bool,
    err: Option<Error>,
    /// The receive's call site (the user's line), for its errors.
    site: Site,
}

pub(super) struct P2p {
    next_id: ReqId,
    out: Vec<VecDeque<Out>>,
    /// Bytes of the copies (`isend` data that did not fit the ring at once) held in
    /// `out`, per destination: bounded by `Config::isend_limit`.
    copied: Vec<u64>,
    done_sends: HashSet<ReqId>,
    send_dst: HashMap<ReqId, usize>,
    cur: Vec<Option<Incoming>>,
    posted: HashMap<(usize, u32), u64>,
    arrived: HashMap<(usize, u32), u64>,
    stash: HashMap<(usize, u32, u64), Stashed>,
    recvs: HashMap<ReqId, (usize, u32, u64)>,
    /// The last rendezvous id used towards each destination.
    sync_ids: Vec<u32>,
    /// Messages sent so far per (destination, tag): the next one's place in its
    /// receiver's matching order.
    sent: HashMap<(usize, u32), u64>,
    /// Bytes of stashed messages that no receive had claimed when they came (bounded by
    /// `Config::stash_limit`: past it, unexpected messages stay in their rings and their
    /// senders wait, instead of this rank's memory growing without end).
    unexpected: u64,
    /// Receives from any source not yet bound to a message, in posting order, by tag.
    any: VecDeque<(ReqId, u32)>,
    /// Messages stashed so far (their arrival order).
    seq: u64,
    /// The last single-copy offer's sequence number towards each destination.
    offer_seq: Vec<u32>,
    /// Destinations that declined an offer (their reads fail): no more offers to them.
    offer_off: Vec<bool>,
    /// Destinations this rank failed to write into: it no longer helps them copy.
    help_off: Vec<bool>,
    /// The tail of the ring to each destination as last read: the writer reads the
    /// receiver's tail again only when this leaves too little room.
    tails: Vec<u64>,
    /// This rank's table of the files it sent from (`Header::file`): by the address and
    /// length of the `&'static str`, 1 + its entry.
    sites: HashMap<(usize, usize), u16>,
}

impl P2p {
    pub(super) fn new(n: usize) -> P2p {
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
    fn abandon(&mut self, dst: usize, id: ReqId, started: bool) {
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
    fn header(&mut self, c: &ShmComm, tag: u32, dtype: DType, len: usize, site: Site, sync: u32) -> [u8; HDR] {
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
    fn bind(&mut self, c: &ShmComm, id: ReqId, key: (usize, u32, u64)) {
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

    pub(super) fn post_recv(&mut self, c: &ShmComm, src: usize, tag: u32) -> ReqId {
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
    fn progress(&mut self, c: &ShmComm, mut target: Option<&mut Target<'_>>) {
        let me = c.rank;
        for dst in 0..c.n {
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
        for src in 0..c.n {
            let ring = Ring::new(c, src, me);
            loop {
                if self.cur[src].is_none() {
                    if !ring.header_ready() {
                        break;
                    }
                    let mut h = [0u8; HDR];
                    ring.peek(&mut h);
                    let hdr = Header::decode(&h);
                    let offer = hdr.offer;
                    let ord = self.arrived.get(&(src, hdr.tag)).copied().unwrap_or(0);
                    let key = (src, hdr.tag, ord);
                    let mut claimed =
                        target.as_deref().is_some_and(|t| t.key == key) || self.recvs.values().any(|k| *k == key);
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
                        break;
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
        self.note_pending(c);
    }

    /// Says whether bytes wait in this rank's queues (`ShmComm::pending_out`).
    fn note_pending(&self, c: &ShmComm) {
        c.pending_out.store(self.out.iter().any(|q| !q.is_empty()), Relaxed);
    }

    /// Takes the target's message from the stash if it is there in full.
    fn take_stashed(&mut self, c: &ShmComm, t: &mut Target<'_>) -> Result<bool> {
        match self.stash.get(&t.key) {
            Some(s) if s.complete => {
                let s = self.stash.remove(&t.key).expect("present");
                if s.unexpected {
                    self.unexpected -= s.hdr.len;
                }
                check_fit(c, t, &s.hdr)?;
                super::copy::copy_slice(&mut t.buf[..s.data.len()], &s.data);
                t.got = s.data.len();
                t.done = true;
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}

fn check_fit(c: &ShmComm, t: &Target<'_>, hdr: &Header) -> Result<()> {
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
            op: "recv",
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
fn take_offer(c: &ShmComm, src: usize, seq: u32, dst: Option<&mut [u8]>) -> bool {
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
            let (pid, addr) = (super::cma::pid(c, src), ring.offer_addr.load(Acquire));
            if n > 1 {
                if dst.len() >= WAKE_HELPER {
                    c.bell(src).ring();
                }
                read_pieces(&ring, seq, pid, addr, dst)
            } else {
                super::cma::read(pid, addr, dst).is_ok()
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
const WAKE_HELPER: usize = 256 << 10;

/// How an offered message of `len` bytes is cut for both ends to copy: (pieces, bytes
/// per piece); one piece below two [`HELP_PIECE`]s, else halves. Measured (`dist-bench
/// -n 2 --ops pingpong --sizes 64K,256K,1M,3M`, µs, 2 / 4 / 8 / 16 / 32 pieces): 1 MiB
/// 28 / 32 / 40 / 43 / 53, 256 KiB 6.1 / 7.3 / 10.2 / 9.9 / 9.9, 64 KiB 2.9–3.0 in all:
/// every extra piece costs a system call and a claim bouncing between the cores, more
/// than a late side loses by leaving its half to the other.
fn pieces(len: usize) -> (usize, usize) {
    if len < 2 * HELP_PIECE {
        return (1, len);
    }
    let piece = len.div_ceil(2).next_multiple_of(4096);
    (len.div_ceil(piece), piece)
}

/// The receiver's pieces of a message both ends copy ([`take_offer`]): reads each piece it
/// takes from the sender's buffer at `addr`, then waits for the pieces the sender took.
/// Whether all of `dst` holds the message.
fn read_pieces(ring: &Ring<'_>, seq: u32, pid: u32, addr: u64, dst: &mut [u8]) -> bool {
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
        ok = ok && super::cma::read(pid, addr + s as u64, &mut dst[s..e]).is_ok();
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
        Some(true) => ok && super::cma::read(pid, addr, dst).is_ok(),
        Some(false) => ok,
        None => false,
    }
}

/// The sender's side of a message both ends copy ([`take_offer`]): writes the pieces it
/// takes into the receiver's buffer, while its send waits for the receiver. False when a
/// write failed (the receiver then reads the whole message, and this sender stops
/// helping that receiver).
fn help(c: &ShmComm, dst: usize, seq: u32, data: &[u8]) -> bool {
    let (n, piece) = pieces(data.len());
    if n < 2 {
        return true;
    }
    let ring = Ring::new(c, c.rank, dst);
    let (pid, addr) = (super::cma::pid(c, dst), ring.word(RECV_ADDR).load(Acquire));
    let mut done = 0u64;
    loop {
        let w = ring.word(CLAIM).fetch_add(1, AcqRel);
        let i = (w & 0xffff_ffff) as usize;
        if w >> 32 != seq as u64 || i >= n {
            return true;
        }
        let (s, e) = (i * piece, data.len().min((i + 1) * piece));
        let ok = super::cma::write(pid, addr + s as u64, &data[s..e]).is_ok();
        sync::worked();
        done += 1;
        ring.word(HELPED).store((seq as u64) << 32 | done | if ok { 0 } else { HELP_FAILED }, Release);
        if !ok {
            return false;
        }
    }
}

/// The ring from `src` to `dst`: head written by src, tail by dst.
struct Ring<'a> {
    head: &'a AtomicU64,
    tail: &'a AtomicU64,
    /// The sender's single-copy offer (`seq << 8 | state`) and the offered address.
    offer: &'a AtomicU64,
    offer_addr: &'a AtomicU64,
    /// Written by the receiver: the rendezvous id of the last blocking send it matched.
    ack: &'a std::sync::atomic::AtomicU32,
    /// Offset of the ring's control block in the segment.
    off: usize,
    data: *mut u8,
    cap: usize,
    writer: bool,
    c: &'a ShmComm,
    src: usize,
    dst: usize,
}

impl<'a> Ring<'a> {
    fn new(c: &'a ShmComm, src: usize, dst: usize) -> Ring<'a> {
        let off = c.seg.layout.ring(src, dst);
        Ring {
            head: c.seg.u64_at(off),
            tail: c.seg.u64_at(off + 64),
            offer: c.seg.u64_at(off + OFFER),
            offer_addr: c.seg.u64_at(off + OFFER_ADDR),
            ack: c.seg.u32_at(off + ACK),
            off,
            data: c.seg.ptr(off + RING_CTL),
            cap: c.seg.layout.ring,
            writer: src == c.rank,
            c,
            src,
            dst,
        }
    }
    /// The control word at `at` (one of the offsets above).
    fn word(&self, at: usize) -> &'a AtomicU64 {
        self.c.seg.u64_at(self.off + at)
    }
    /// Receiver side: it has posted `count` receives for `tag` from this ring's sender.
    fn publish_posted(&self, tag: u32, count: u64) {
        let want = ((tag as u64) << 32) | count.min(u32::MAX as u64);
        for i in 0..POSTED_SLOTS {
            let w = self.c.seg.u64_at(self.off + POSTED + 8 * i);
            let v = w.load(Acquire);
            if v == 0 || v >> 32 == tag as u64 {
                w.store(want, Release);
                self.c.bell(self.src).ring();
                return;
            }
        }
    }
    /// Sender side: starts loading the receiver's table of posted receives into this
    /// core's cache (a hint; no effect on what is read).
    fn prefetch_posted(&self) {
        #[cfg(target_arch = "x86_64")]
        for at in (POSTED..POSTED + 8 * POSTED_SLOTS).step_by(LINE) {
            // SAFETY: a prefetch of a mapped address; it reads nothing into the program.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    self.c.seg.ptr(self.off + at) as *const i8
                )
            };
        }
    }
    /// Sender side: how many receives for `tag` the receiver has posted, if its table
    /// holds the tag.
    fn posted(&self, tag: u32) -> Option<u64> {
        (0..POSTED_SLOTS).find_map(|i| {
            let v = self.c.seg.u64_at(self.off + POSTED + 8 * i).load(Acquire);
            (v != 0 && v >> 32 == tag as u64).then_some(v & 0xffff_ffff)
        })
    }
    fn free(&self) -> usize {
        let h = self.head.load(Acquire);
        let t = self.tail.load(Acquire);
        self.cap - (h - t) as usize
    }
    /// Writer side: free bytes as of the tail last seen (`seen`), read again (and
    /// `seen` updated) when that leaves fewer than `want`.
    fn free_seen(&self, seen: &mut u64, want: usize) -> usize {
        let h = self.head.load(Relaxed);
        let free = self.cap - (h - *seen) as usize;
        if free >= want {
            return free;
        }
        *seen = self.tail.load(Acquire);
        self.cap - (h - *seen) as usize
    }
    /// Reader side: bytes published and not yet read. (The head this rank sees may lag
    /// a tail it moved past a whole message, which it took on its header's mark alone.)
    fn avail(&self) -> usize {
        self.head.load(Acquire).saturating_sub(self.tail.load(Acquire)) as usize
    }
    /// Copies `src` into the ring at stream position `pos` (caller checked it is free).
    fn put(&self, pos: u64, src: &[u8]) {
        let at = (pos % self.cap as u64) as usize;
        let first = src.len().min(self.cap - at);
        // SAFETY: bytes [pos, pos+len) of the ring are free: the reader has released
        // them, and nobody reads them before they are published.
        unsafe {
            super::copy::copy(self.data.add(at), src.as_ptr(), first);
            super::copy::copy(self.data, src.as_ptr().add(first), src.len() - first);
        }
    }
    /// The first word of the line at stream position `pos` (a line boundary), where a
    /// header's mark goes.
    fn mark_word(&self, pos: u64) -> &AtomicU64 {
        debug_assert!(pos.is_multiple_of(LINE as u64));
        // SAFETY: the ring's data is line-aligned in the segment and its size a whole
        // number of lines, so the word is in bounds and aligned.
        unsafe { &*(self.data.add((pos % self.cap as u64) as usize) as *const AtomicU64) }
    }
    /// Writer side: publishes a message's header (with `flags`) at the head, and
    /// `payload` after it, and moves the head `adv` bytes on (the message's lines, or
    /// the header alone). The header's mark is stored last: a reader that sees it sees
    /// the rest of the header (and, with [`WHOLE`], the payload).
    fn write_msg(&self, hdr: &[u8; HDR], flags: u8, payload: &[u8], adv: usize) {
        debug_assert!(self.writer && adv >= HDR + payload.len() && adv <= self.free());
        let h = self.head.load(Relaxed);
        self.put(h + HDR as u64, payload);
        let mut head = *hdr;
        head[FLAGS_AT] |= flags;
        self.put(h + 8, &head[8..]);
        self.mark_word(h).store(mark(h), Release);
        self.publish(h + adv as u64);
    }
    /// Writer side: writes the next payload bytes `src` and moves the head `adv` (≥
    /// `src.len()`: with the message's padding) bytes on.
    fn write_bytes(&self, src: &[u8], adv: usize) {
        debug_assert!(self.writer && adv >= src.len() && adv <= self.free());
        let h = self.head.load(Relaxed);
        self.put(h, src);
        self.publish(h + adv as u64);
    }
    fn publish(&self, head: u64) {
        self.head.store(head, Release);
        self.c.moved.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.c.bell(self.dst).ring();
    }
    /// Reader side: whether a header was published at the tail (a line boundary between
    /// messages), seen by its mark.
    fn header_ready(&self) -> bool {
        let t = self.tail.load(Relaxed);
        self.mark_word(t).load(Acquire) == mark(t)
    }
    /// Copies the ring's bytes at stream position `pos` into `dst` (the other direction
    /// of [`Ring::put`]).
    fn get(&self, pos: u64, dst: &mut [u8]) {
        let at = (pos % self.cap as u64) as usize;
        let first = dst.len().min(self.cap - at);
        // SAFETY: callers read published bytes not yet released ([tail, head), or a
        // whole message seen by its mark), which stay theirs until released.
        unsafe {
            super::copy::copy(dst.as_mut_ptr(), self.data.add(at), first);
            super::copy::copy(dst.as_mut_ptr().add(first), self.data, dst.len() - first);
        }
    }
    /// Copies the next `dst.len()` bytes without consuming them; returns the tail.
    fn peek(&self, dst: &mut [u8]) -> u64 {
        let t = self.tail.load(Acquire);
        self.get(t, dst);
        t
    }
    /// Copies `dst.len()` bytes from `off` bytes past the tail, without consuming them.
    fn peek_at(&self, off: usize, dst: &mut [u8]) {
        self.get(self.tail.load(Acquire) + off as u64, dst);
    }
    fn read(&self, dst: &mut [u8]) {
        let t = self.peek(dst);
        self.release(t, dst.len());
    }
    fn skip(&self, k: usize) {
        let t = self.tail.load(Acquire);
        self.release(t, k);
    }
    fn release(&self, t: u64, k: usize) {
        self.tail.store(t + k as u64, Release);
        self.c.moved.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.c.bell(self.src).ring();
    }
}

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
    peer: usize,
    mut done: impl FnMut(&mut P2p) -> Result<bool>,
) -> Result<()> {
    let started = Instant::now();
    let me = c.rank;
    let waiting = move || {
        if op == "recv" {
            format!("rank {me} waits in recv from rank {peer} ({site})")
        } else {
            format!("rank {me} waits in send to rank {peer} ({site}), which is not receiving")
        }
    };
    let blocked = std::cell::Cell::new(false);
    let kind = if op == "recv" { crate::verify::watchdog::WAIT_RECV } else { crate::verify::watchdog::WAIT_SEND };
    let ws = super::records::WaitState::new(kind, peer as u32);
    let r = sync::wait_on(
        &c.bell(me),
        c.pace(),
        || done(p),
        || c.health(&mut std::iter::once(peer), op, site, started, &waiting, &ws),
        || {
            blocked.set(true);
            c.mark_wait(kind, peer as u32, op, site);
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
        drive(c, &mut p, site, "isend", dst, |p| {
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
    let r = drive(c, &mut p, site, "send", dst, |p| {
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

/// A blocking send whose receiver reads the payload from `data` itself (module docs):
/// offers the buffer, sends the header alone, and waits until the receiver has read it
/// — or streams it through the ring after all, when the receiver declined, or when the
/// message fits the ring and nobody claimed it within [`WITHDRAW_AFTER`].
fn send_offer(
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
    let r = drive(c, p, site, "send", dst, |p| {
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
        // Take the buffer back before the caller may reuse it: withdraw the offer, or
        // let a read already under way finish — however long it takes (a message of
        // any size may be on offer), unless the reader's process is gone.
        if ring.offer.compare_exchange(word(OFFERED), word(WITHDRAWN), AcqRel, Acquire).is_err() {
            // No deadline (`sync::await_peer`): a reader stopped mid-read holds the send.
            let reader = super::cma::pid(c, dst);
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
    p.done_sends.remove(&id);
    p.send_dst.remove(&id);
    if let Some(sid) = streamed {
        p.done_sends.remove(&sid);
    }
    r
}

pub(super) fn wait_send(c: &ShmComm, site: Site, id: ReqId) -> Result<()> {
    let mut p = lock(c);
    let dst = p.send_dst.get(&id).copied().ok_or_else(|| Error::invalid("wait", "unknown send request"))?;
    let r = drive(c, &mut p, site, "send", dst, |p| {
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
    drive(c, p, site, "recv", src, |p| {
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

/// Drives progress until `done`, for a receive from any source: no single peer to wait
/// on, so the deadlock detector does not follow it (the deadline does); a failed peer
/// is an error, and so is every other rank having left.
fn drive_any(c: &ShmComm, p: &mut P2p, site: Site, mut done: impl FnMut(&mut P2p) -> Result<bool>) -> Result<()> {
    let started = Instant::now();
    let me = c.rank;
    let waiting = move || format!("rank {me} waits in recv_any from any rank ({site})");
    let ws = super::records::WaitState::new(0, u32::MAX);
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
                        "every other rank of {} left (returned from its entry) while rank {me} still waits in \
                         recv_any at {}",
                        c.name,
                        site.with_callers()
                    ),
                ));
            }
            c.health(&mut running.into_iter(), "recv_any", site, started, &waiting, &ws)
        },
        || {},
    );
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
    drive(c, &mut p, Site::caller(), "send", dst, |p| {
        p.progress(c, None);
        Ok(p.out.iter().all(|q| q.is_empty()))
    })
}
