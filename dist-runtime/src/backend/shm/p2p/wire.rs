//! The wire layout of a message in a ring: the 40-byte header and its fields, the
//! ring's control words (acknowledgements, posted receives, the single-copy offer), and
//! the small hasher of the engine's tables.

use super::*;

/// The engine's maps, keyed by ranks, tags, sequence numbers and request ids: integers
/// the program itself chooses, so SipHash's resistance to chosen keys buys nothing, and
/// it showed in an 8-byte ping-pong's profile (several lookups per message; measured:
/// docs/performance.md, "Figures behind code choices").
pub(super) type HashMap<K, V> = std::collections::HashMap<K, V, std::hash::BuildHasherDefault<Fx>>;
pub(super) type HashSet<K> = std::collections::HashSet<K, std::hash::BuildHasherDefault<Fx>>;

/// A multiply-rotate hash of integer words (rustc's FxHasher).
#[derive(Default, Clone, Copy)]
pub(in crate::backend::shm) struct Fx(u64);

impl Fx {
    #[inline]
    pub(super) fn add(&mut self, x: u64) {
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
pub(super) const HDR: usize = 40;
/// Ring bytes are laid out by cache lines: each message (header, payload, padding) takes
/// a whole number of them.
pub(super) const LINE: usize = 64;
/// Where the payload of an offered message starts when it follows in the ring after all
/// (the header's line holds the header alone).
pub(super) const OFFER_BODY: usize = LINE;
/// Largest copy into or out of a ring before publishing it.
pub(super) const PIECE: usize = 64 << 10;
/// Header bytes: the mark (a word the writer stores last, see [`mark`]), tag, dtype,
/// flags, the sender's file (an index into its table of files), length, line,
/// rendezvous id, offer.
pub(super) const TAG_AT: usize = 8;
pub(super) const DTYPE_AT: usize = 12;
pub(super) const FLAGS_AT: usize = 13;
pub(super) const FILE_AT: usize = 14;
pub(super) const LEN_AT: usize = 16;
pub(super) const LINE_AT: usize = 24;
/// Where a header keeps the rendezvous id of a blocking send (0: none).
pub(super) const SYNC_AT: usize = 28;
/// Header bytes holding an offer's sequence number (0: the payload follows the header).
pub(super) const OFFER_AT: usize = 32;
/// Header flag: the payload and padding were published with the header, so a reader
/// that sees the header may take the whole message without looking at the ring's head.
pub(super) const WHOLE: u8 = 1;
/// The mark of a header at stream position `pos`: a reader at `pos` knows a header was
/// published there once the first word of the line holds it. Stale bytes at that place
/// in the ring (an earlier pass's header, whose position differed by a multiple of the
/// ring's size, or payload) hold it only by a 2⁻⁶⁴ chance: the salt keeps small
/// integers in a payload from being taken for one.
pub(super) fn mark(pos: u64) -> u64 {
    (pos + 1) ^ 0x6469_7374_6d73_6721
}
/// `x` rounded up to whole lines.
pub(super) fn lines(x: usize) -> usize {
    x.next_multiple_of(LINE)
}
/// Offset, in a ring's control block, of the word where the receiver acknowledges a
/// blocking send: it stores the send's rendezvous id once a receive for it is posted.
pub(super) const ACK: usize = 96;
/// Offset, in a ring's control block, of the receiver's table of posted receives from
/// the ring's sender: `POSTED_SLOTS` words of `tag << 32 | count`, where count is how
/// many receives for that tag it has posted (0: an empty slot). A blocking send whose
/// message is the k-th on its tag is matched once count > k, whether or not the
/// receiver has read it yet (it may be waiting in a collective meanwhile). Tags beyond
/// the table's room fall back on the acknowledgement the receiver sends when it reads
/// the message.
pub(super) const POSTED: usize = 128;
pub(super) const POSTED_SLOTS: usize = 16;
/// Offset, in a ring's control block, of the sender's single-copy offer:
/// `seq << 8 | state` (see the module docs), and at `OFFER_ADDR` the address of the
/// offered buffer in the sender's memory.
pub(super) const OFFER: usize = 104;
pub(super) const OFFER_ADDR: usize = 112;
pub(super) const OFFERED: u64 = 1;
pub(super) const TAKEN: u64 = 2;
pub(super) const DONE: u64 = 3;
pub(super) const WITHDRAWN: u64 = 4;
pub(super) const DECLINED: u64 = 5;
/// Offsets, in a ring's control block, of the words by which a sender helps its receiver
/// copy an offered message (both ends copying at once, see [`take_offer`]): the
/// receiver's destination address (written by the receiver before it claims the offer),
/// the next piece to copy (`seq << 32 | index`, taken by either side with a fetch-add),
/// and the pieces the sender has written (`seq << 32 | count`; [`HELP_FAILED`] in the
/// count: one of its writes failed). On a cache line of their own.
pub(super) const RECV_ADDR: usize = 256;
pub(super) const CLAIM: usize = 264;
pub(super) const HELPED: usize = 272;
pub(super) const HELP_FAILED: u64 = 1 << 31;
/// Smallest piece of an offered message that either side copies on its own: below two
/// of these the receiver reads the message alone (a second `process_vm_*` call and the
/// handshake would cost more than half a copy saves).
pub(super) const HELP_PIECE: usize = 32 << 10;
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
pub(super) const WITHDRAW_AFTER: std::time::Duration = std::time::Duration::from_micros(40);

#[derive(Clone, Copy)]
pub(super) struct Header {
    pub(super) tag: u32,
    pub(super) dtype: u8,
    pub(super) flags: u8,
    pub(super) len: u64,
    pub(super) line: u32,
    /// The sender's file: 1 + its index in the sender's table of files (0: not in the
    /// table; read with [`Header::file`]).
    pub(super) file: u16,
    /// The rendezvous id of a blocking send in rendezvous mode, which waits for the
    /// receiver's acknowledgement.
    pub(super) sync: u32,
    /// The sequence number of a single-copy offer (0: the payload follows the header).
    pub(super) offer: u32,
}

impl Header {
    /// Bytes [0, 8) are the mark, written by the ring when it publishes the header.
    pub(super) fn encode(tag: u32, dtype: DType, len: usize, file: u16, line: u32, sync: u32) -> [u8; HDR] {
        let mut h = [0u8; HDR];
        h[TAG_AT..TAG_AT + 4].copy_from_slice(&tag.to_le_bytes());
        h[DTYPE_AT] = dtype as u8;
        h[FILE_AT..FILE_AT + 2].copy_from_slice(&file.to_le_bytes());
        h[LEN_AT..LEN_AT + 8].copy_from_slice(&(len as u64).to_le_bytes());
        h[LINE_AT..LINE_AT + 4].copy_from_slice(&line.to_le_bytes());
        h[SYNC_AT..SYNC_AT + 4].copy_from_slice(&sync.to_le_bytes());
        h
    }
    pub(super) fn decode(h: &[u8; HDR]) -> Header {
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
    pub(super) fn file(&self, c: &ShmComm, src: usize) -> String {
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
