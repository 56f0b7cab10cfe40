//! The job-wide wait board: one entry per world rank in the world communicator's
//! segment, where a blocked rank publishes what it waits in (op, communicator, call
//! site) and on whom (world ranks), whatever communicator it waits on. Every health
//! check of a blocked wait republishes its entry and hands a snapshot of the board to
//! `verify::deadlock`, which finds the cycles no rank can leave.
//!
//! Entry format (`segment::BOARD_FIXED` bytes, then a bit per world rank):
//! seq u32 (odd while the owner writes: a seqlock), kind, wait id, beat, moved, peer,
//! line, pid (u32 each), communicator name [32..64), op [64..96), collective number u32
//! [96..100) (for a point-to-point wait: its tag + 1, 0 for none), file [100..256).

use super::segment::{self, Segment};
use crate::verify::deadlock::Waiter;
use crate::verify::watchdog::WAIT_COLL;
use std::cell::Cell;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

const SEQ: usize = 0;
const KIND: usize = 4;
const WAIT_ID: usize = 8;
const BEAT: usize = 12;
const MOVED: usize = 16;
const PEER: usize = 20;
const LINE: usize = 24;
const PID: usize = 28;
const COMM: usize = 32;
const OP: usize = 64;
const OPSEQ: usize = 96;
const FILE: usize = 100;

/// This process's entry on its job's board, and the board itself.
pub(crate) struct Board {
    seg: Arc<Segment>,
    /// This rank's world rank.
    pub me: usize,
    /// Serializes this process's writers (several threads may wait at once).
    write: Mutex<()>,
}

static BOARD: Mutex<Option<Arc<Board>>> = Mutex::new(None);
/// Threads of this process blocked in a shm wait right now.
static BLOCKED: AtomicU32 = AtomicU32::new(0);
static NEXT_WAIT: AtomicU32 = AtomicU32::new(0);
/// Threads of this process that have ever run a shm op.
static THREADS: AtomicU32 = AtomicU32::new(0);
thread_local! {
    static WAIT: Cell<u32> = const { Cell::new(0) };
    static ENTERED: Cell<bool> = const { Cell::new(false) };
}

/// Counts this thread among those that use the runtime (once per thread; a thread-local
/// read on every op after that).
#[inline]
pub(super) fn enter() {
    // (A communicator's background worker runs ops on a user thread's behalf: not a
    // thread of its own here; see `crate::backend::wait_is_the_ranks`.)
    if crate::backend::background() {
        return;
    }
    ENTERED.with(|e| {
        if !e.get() {
            e.set(true);
            THREADS.fetch_add(1, SeqCst);
        }
    });
}

/// Whether only one thread of this process has ever run a shm op. Only then can a
/// blocked rank be said to be stuck (another thread, running or blocked elsewhere,
/// might release what it waits for), and only then do blocking sends wait for their
/// receives (a thread's posted receive cannot be held up behind another's send).
pub(super) fn single_thread() -> bool {
    THREADS.load(SeqCst) <= 1
}

/// Makes the world communicator's segment this process's board.
pub(super) fn install(seg: Arc<Segment>, me: usize) {
    // The pid is there from the start: a rank that never blocks can still be found stopped.
    seg.u32_at(seg.layout.board(me) + PID).store(std::process::id(), SeqCst);
    *BOARD.lock().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(Board { seg, me, write: Mutex::new(()) }));
}

impl Board {
    /// The world's segment, where this board lives.
    pub(super) fn segment(&self) -> Arc<Segment> {
        self.seg.clone()
    }
}

pub(super) fn current() -> Option<Arc<Board>> {
    BOARD.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// A wait of this thread goes to sleep: count it, give it a new id.
pub(super) fn begin() {
    BLOCKED.fetch_add(1, SeqCst);
    WAIT.with(|w| w.set(NEXT_WAIT.fetch_add(1, SeqCst).wrapping_add(1)));
}

/// The wait ended: when no thread of this process is blocked any more, say so.
pub(super) fn end() {
    if BLOCKED.fetch_sub(1, SeqCst) == 1 {
        if let Some(b) = current() {
            b.clear();
        }
    }
}

/// Whether this rank's entry must say "not blocked": another thread of the process uses
/// the runtime (one record cannot describe it, and either may free the other).
pub(super) fn several() -> bool {
    BLOCKED.load(SeqCst) > 1 || !single_thread() || !crate::backend::wait_is_the_ranks()
}

/// The id of this thread's current wait.
pub(super) fn wait_id() -> u32 {
    WAIT.with(|w| w.get())
}

impl Board {
    fn base(&self, r: usize) -> usize {
        self.seg.layout.board(r)
    }

    fn put_str(&self, at: usize, len: usize, s: &str) {
        let b = s.as_bytes();
        // Keep the end of long strings (a file path's tail names the file).
        let k = b.len().min(len - 1);
        let mut buf = vec![0u8; len];
        buf[..k].copy_from_slice(&b[b.len() - k..]);
        // SAFETY: our own entry, inside the segment; readers detect torn reads by seq.
        unsafe { std::ptr::copy_nonoverlapping(buf.as_ptr(), self.seg.ptr(at), len) };
    }

    /// Publishes this rank's wait.
    pub(super) fn publish(&self, w: &Waiter) {
        let _g = self.write.lock().unwrap_or_else(|p| p.into_inner());
        let base = self.base(self.me);
        let seq = self.seg.u32_at(base + SEQ);
        let s = seq.load(SeqCst);
        seq.store(s | 1, SeqCst);
        std::sync::atomic::fence(Ordering::Release);
        let word = |off: usize, v: u32| self.seg.u32_at(base + off).store(v, Ordering::Relaxed);
        word(KIND, w.kind);
        word(WAIT_ID, w.wait_id);
        word(BEAT, w.beat);
        word(MOVED, w.moved);
        word(PEER, w.peer);
        word(LINE, w.line);
        word(PID, w.pid);
        // (A point-to-point wait has no collective number: the slot holds its tag + 1, 0
        // for none.)
        let opseq = match w.tag {
            Some(t) if w.kind != WAIT_COLL => t.wrapping_add(1),
            _ => w.seq.min(u32::MAX as u64) as u32,
        };
        word(OPSEQ, opseq);
        self.put_str(base + COMM, OP - COMM, &w.comm);
        self.put_str(base + OP, OPSEQ - OP, &w.op);
        self.put_str(base + FILE, segment::BOARD_FIXED - FILE, &w.file);
        let n = self.seg.layout.n;
        let mut bits = vec![0u8; n.div_ceil(8)];
        for &r in &w.on {
            if r < n {
                bits[r / 8] |= 1 << (r % 8);
            }
        }
        // SAFETY: as in put_str; the bitmask fits the entry (Layout sizes it for n).
        unsafe { std::ptr::copy_nonoverlapping(bits.as_ptr(), self.seg.ptr(base + segment::BOARD_FIXED), bits.len()) };
        std::sync::atomic::fence(Ordering::Release);
        seq.store((s | 1).wrapping_add(1), SeqCst);
    }

    /// This rank is not blocked.
    fn clear(&self) {
        let _g = self.write.lock().unwrap_or_else(|p| p.into_inner());
        let base = self.base(self.me);
        let seq = self.seg.u32_at(base + SEQ);
        let s = seq.load(SeqCst);
        seq.store(s | 1, SeqCst);
        self.seg.u32_at(base + KIND).store(0, SeqCst);
        seq.store((s | 1).wrapping_add(1), SeqCst);
    }

    /// Rank r's entry; "not blocked" when it was being written.
    fn read(&self, r: usize) -> Waiter {
        let base = self.base(r);
        let seq = self.seg.u32_at(base + SEQ);
        let before = seq.load(SeqCst);
        let word = |off: usize| self.seg.u32_at(base + off).load(Ordering::Relaxed);
        let kind = word(KIND);
        if before & 1 == 1 || kind == 0 {
            return Waiter { pid: word(PID), ..Waiter::default() };
        }
        let n = self.seg.layout.n;
        let mut fixed = [0u8; segment::BOARD_FIXED];
        let mut bits = vec![0u8; n.div_ceil(8)];
        // SAFETY: inside the segment; a concurrent write is detected by the seq re-read.
        unsafe {
            std::ptr::copy_nonoverlapping(self.seg.ptr(base), fixed.as_mut_ptr(), fixed.len());
            std::ptr::copy_nonoverlapping(self.seg.ptr(base + segment::BOARD_FIXED), bits.as_mut_ptr(), bits.len());
        }
        std::sync::atomic::fence(Ordering::Acquire);
        if seq.load(SeqCst) != before {
            return Waiter::default();
        }
        let u = |off: usize| u32::from_le_bytes(fixed[off..off + 4].try_into().expect("4 bytes"));
        let s = |from: usize, to: usize| {
            let b = &fixed[from..to];
            String::from_utf8_lossy(&b[..b.iter().position(|&x| x == 0).unwrap_or(b.len())]).into_owned()
        };
        let p2p = u(KIND) != WAIT_COLL;
        Waiter {
            kind: u(KIND),
            wait_id: u(WAIT_ID),
            beat: u(BEAT),
            moved: u(MOVED),
            peer: u(PEER),
            line: u(LINE),
            pid: u(PID),
            comm: s(COMM, OP),
            op: s(OP, OPSEQ),
            seq: if p2p { 0 } else { u(OPSEQ) as u64 },
            tag: if p2p { u(OPSEQ).checked_sub(1) } else { None },
            file: s(FILE, segment::BOARD_FIXED),
            on: (0..n).filter(|&q| bits[q / 8] & (1 << (q % 8)) != 0).collect(),
            inst: 0,
        }
    }

    /// Every rank's entry, by world rank.
    pub(super) fn snapshot(&self) -> Vec<Waiter> {
        (0..self.seg.layout.n).map(|r| self.read(r)).collect()
    }

    /// Ranks on the board.
    pub(super) fn size(&self) -> usize {
        self.seg.layout.n
    }
}
