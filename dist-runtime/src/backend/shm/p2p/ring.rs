//! One single-producer/single-consumer byte ring per ordered pair of ranks: writing
//! headers and payloads as space frees up, reading them on the other side.

use super::*;

/// The ring from `src` to `dst`: head written by src, tail by dst.
pub(super) struct Ring<'a> {
    pub(super) head: &'a AtomicU64,
    pub(super) tail: &'a AtomicU64,
    /// The sender's single-copy offer (`seq << 8 | state`) and the offered address.
    pub(super) offer: &'a AtomicU64,
    pub(super) offer_addr: &'a AtomicU64,
    /// Written by the receiver: the rendezvous id of the last blocking send it matched.
    pub(super) ack: &'a std::sync::atomic::AtomicU32,
    /// Offset of the ring's control block in the segment.
    pub(super) off: usize,
    pub(super) data: *mut u8,
    pub(super) cap: usize,
    pub(super) writer: bool,
    pub(super) c: &'a ShmComm,
    pub(super) src: usize,
    pub(super) dst: usize,
}

impl<'a> Ring<'a> {
    pub(super) fn new(c: &'a ShmComm, src: usize, dst: usize) -> Ring<'a> {
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
    pub(super) fn word(&self, at: usize) -> &'a AtomicU64 {
        self.c.seg.u64_at(self.off + at)
    }
    /// Receiver side: it has posted `count` receives for `tag` from this ring's sender.
    pub(super) fn publish_posted(&self, tag: u32, count: u64) {
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
    pub(super) fn prefetch_posted(&self) {
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
    pub(super) fn posted(&self, tag: u32) -> Option<u64> {
        (0..POSTED_SLOTS).find_map(|i| {
            let v = self.c.seg.u64_at(self.off + POSTED + 8 * i).load(Acquire);
            (v != 0 && v >> 32 == tag as u64).then_some(v & 0xffff_ffff)
        })
    }
    pub(super) fn free(&self) -> usize {
        let h = self.head.load(Acquire);
        let t = self.tail.load(Acquire);
        self.cap - (h - t) as usize
    }
    /// Writer side: free bytes as of the tail last seen (`seen`), read again (and
    /// `seen` updated) when that leaves fewer than `want`.
    pub(super) fn free_seen(&self, seen: &mut u64, want: usize) -> usize {
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
    pub(super) fn avail(&self) -> usize {
        self.head.load(Acquire).saturating_sub(self.tail.load(Acquire)) as usize
    }
    /// Copies `src` into the ring at stream position `pos` (caller checked it is free).
    pub(super) fn put(&self, pos: u64, src: &[u8]) {
        let at = (pos % self.cap as u64) as usize;
        let first = src.len().min(self.cap - at);
        // SAFETY: bytes [pos, pos+len) of the ring are free: the reader has released
        // them, and nobody reads them before they are published.
        unsafe {
            super::super::copy::copy(self.data.add(at), src.as_ptr(), first);
            super::super::copy::copy(self.data, src.as_ptr().add(first), src.len() - first);
        }
    }
    /// The first word of the line at stream position `pos` (a line boundary), where a
    /// header's mark goes.
    pub(super) fn mark_word(&self, pos: u64) -> &AtomicU64 {
        debug_assert!(pos.is_multiple_of(LINE as u64));
        // SAFETY: the ring's data is line-aligned in the segment and its size a whole
        // number of lines, so the word is in bounds and aligned.
        unsafe { &*(self.data.add((pos % self.cap as u64) as usize) as *const AtomicU64) }
    }
    /// Writer side: publishes a message's header (with `flags`) at the head, and
    /// `payload` after it, and moves the head `adv` bytes on (the message's lines, or
    /// the header alone). The header's mark is stored last: a reader that sees it sees
    /// the rest of the header (and, with [`WHOLE`], the payload).
    pub(super) fn write_msg(&self, hdr: &[u8; HDR], flags: u8, payload: &[u8], adv: usize) {
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
    pub(super) fn write_bytes(&self, src: &[u8], adv: usize) {
        debug_assert!(self.writer && adv >= src.len() && adv <= self.free());
        let h = self.head.load(Relaxed);
        self.put(h, src);
        self.publish(h + adv as u64);
    }
    pub(super) fn publish(&self, head: u64) {
        self.head.store(head, Release);
        self.c.moved.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.c.bell(self.dst).ring();
    }
    /// Reader side: whether a header was published at the tail (a line boundary between
    /// messages), seen by its mark.
    pub(super) fn header_ready(&self) -> bool {
        let t = self.tail.load(Relaxed);
        self.mark_word(t).load(Acquire) == mark(t)
    }
    /// Copies the ring's bytes at stream position `pos` into `dst` (the other direction
    /// of [`Ring::put`]).
    pub(super) fn get(&self, pos: u64, dst: &mut [u8]) {
        let at = (pos % self.cap as u64) as usize;
        let first = dst.len().min(self.cap - at);
        // SAFETY: callers read published bytes not yet released ([tail, head), or a
        // whole message seen by its mark), which stay theirs until released.
        unsafe {
            super::super::copy::copy(dst.as_mut_ptr(), self.data.add(at), first);
            super::super::copy::copy(dst.as_mut_ptr().add(first), self.data, dst.len() - first);
        }
    }
    /// Copies the next `dst.len()` bytes without consuming them; returns the tail.
    pub(super) fn peek(&self, dst: &mut [u8]) -> u64 {
        let t = self.tail.load(Acquire);
        self.get(t, dst);
        t
    }
    /// Copies `dst.len()` bytes from `off` bytes past the tail, without consuming them.
    pub(super) fn peek_at(&self, off: usize, dst: &mut [u8]) {
        self.get(self.tail.load(Acquire) + off as u64, dst);
    }
    pub(super) fn read(&self, dst: &mut [u8]) {
        let t = self.peek(dst);
        self.release(t, dst.len());
    }
    pub(super) fn skip(&self, k: usize) {
        let t = self.tail.load(Acquire);
        self.release(t, k);
    }
    pub(super) fn release(&self, t: u64, k: usize) {
        self.tail.store(t + k as u64, Release);
        self.c.moved.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.c.bell(self.src).ring();
    }
}
