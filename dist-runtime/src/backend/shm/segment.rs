//! The shared segment of one communicator: a memfd mapped by every member.
//!
//! The member with rank 0 creates it (`memfd_create`, so it never appears in /dev/shm and
//! needs no cleanup: the kernel frees it when the last mapping goes, kill -9 included)
//! and publishes `pid:fd` through the rendezvous store; the others open
//! `/proc/<pid>/fd/<fd>`, which the kernel only allows to processes of the same user.
//!
//! Layout (all offsets 64-byte aligned, see `Layout`):
//! ```text
//! header | ctl[n] | board[n] | sites[n] | slot[n][2] | ring[n*n]
//! ```
//! `ctl[r]` holds rank r's futex words, its pid and state, and its fingerprints;
//! `board[r]` is rank r's job-wide wait record (used in the world's segment only; see
//! `board.rs`);
//! `sites[r]` names the source files rank r sends point-to-point messages from (a
//! message's header carries an index into it, `p2p.rs`);
//! `slot[r][p]` is rank r's staging area for collectives in epoch parity p;
//! `ring[s*n+d]` is the byte ring carrying point-to-point messages from s to d.

use crate::error::{Error, Result};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, AtomicU64};

const MAGIC: u64 = 0x6469_7374_5f73_686d; // "dist_shm"
const HEADER: usize = 4096;
/// Header word: whether rank 0's host has fewer cores than the job has local ranks (its
/// `Config::oversubscribed`), written before anyone joins: the one answer every member
/// uses to choose paths (ranks with different CPU affinities or quotas would otherwise
/// count cores differently and take different paths through one op).
pub(crate) const OVERSUBSCRIBED: usize = 16;
/// Header word: 0, or 1 + the rank that revoked the communicator (`Comm::revoke`): every
/// op of every member fails from then on (`recovery.rs`). On a line no other word shares.
pub(crate) const REVOKED: usize = 64;
/// Header word every barrier's waiters sleep on: an arrival that finds every member
/// there (each rank's own `EPOCH` word, `epoch.rs`) bumps it and wakes them.
pub(crate) const GEN: usize = 128;
pub(crate) const GEN_SLEEPERS: usize = 132;
/// Header word of the world's segment: how many of the job's ranks on this host are
/// awake (not asleep in a futex wait of dist's, and not finished). A waiter on a host
/// with more ranks than cores spins, instead of yielding at once, while this is at most
/// the core count (`sync::wait_on`). On a cache line of its own.
pub(crate) const AWAKE: usize = 192;
/// Header words of the world's segment: where ranks are bound to CPUs (`init.rs`), the
/// count of ranks awake per CPU (by CPU number modulo `AWAKE_CPUS`): a bound waiter
/// spins only while it is the one rank awake on its CPU.
pub(crate) const AWAKE_CPU: usize = 256;
pub(crate) const AWAKE_CPUS: usize = 64;
pub(crate) const CTL: usize = 1536;
pub(crate) const RING_CTL: usize = 320;

// ctl[r] field offsets
pub(crate) const EPOCH: usize = 0;
/// Where this rank's buffer of the current op lies when it came from `Comm::alloc`
/// (`shared.rs`): u64 barrier count (the 64-bit epoch it is for), u64 allocation id + 1,
/// u64 offset. On the epoch's cache line: written just before arriving, read by peers
/// just after.
pub(crate) const SHARED: usize = 8;
pub(crate) const BELL: usize = 64;
pub(crate) const BELL_SLEEPERS: usize = 68;
pub(crate) const PID: usize = 128;
pub(crate) const STATE: usize = 132;
/// Address, in the rank's own address space, of a word holding `CMA_MAGIC` (the probe
/// that tells whether peers may read this process with process_vm_readv).
pub(crate) const CMA_ADDR: usize = 136;
pub(crate) const CMA_MAGIC: u64 = 0x636d_615f_6f6b_2121;
pub(crate) const FP: usize = 192; // two records of FP_LEN, by parity
pub(crate) const FP_LEN: usize = 256;
pub(crate) const REASON: usize = 704; // 320 bytes, NUL-padded
pub(crate) const REASON_LEN: usize = 320;
/// What the rank is blocked on, for the watchdog: kind u32 (0 none, 1 recv, 2 send,
/// 3 collective), peer or target epoch u32, line u32, op name [16..48), file [48..256).
pub(crate) const WAIT: usize = 1024;
pub(crate) const WAIT_LEN: usize = 256;

/// Entries of a rank's table of source files (`sites[r]`), and the bytes of each: a
/// length byte, then up to `SITE_LEN - 1` bytes of the path (its end, when longer).
pub(crate) const SITES: usize = 64;
pub(crate) const SITE_LEN: usize = 128;

/// Fixed bytes of a board entry (the rank bitmask follows).
pub(crate) const BOARD_FIXED: usize = 256;

/// Rank states in `ctl[r].state`.
pub(crate) const ALIVE: u32 = 1;
pub(crate) const FINISHED: u32 = 2;
pub(crate) const FAILED: u32 = 3;

#[derive(Clone, Copy, Debug)]
pub(crate) struct Layout {
    pub n: usize,
    pub slot: usize,
    pub ring: usize,
    ctl_off: usize,
    board_off: usize,
    /// Bytes of one board entry: `BOARD_FIXED` plus a bit per rank, 64-byte aligned.
    pub board_entry: usize,
    sites_off: usize,
    slots_off: usize,
    rings_off: usize,
    pub total: usize,
}

fn align(x: usize, a: usize) -> usize {
    x.div_ceil(a) * a
}

impl Layout {
    pub(crate) fn new(n: usize, slot: usize, ring: usize) -> Layout {
        let ctl_off = HEADER;
        let board_off = ctl_off + n * CTL;
        let board_entry = align(BOARD_FIXED + n.div_ceil(8), 64);
        let sites_off = board_off + n * board_entry;
        let slots_off = align(sites_off + n * SITES * SITE_LEN, 4096);
        let rings_off = align(slots_off + n * 2 * slot, 4096);
        let total = align(rings_off + n * n * (RING_CTL + ring), 4096);
        Layout { n, slot, ring, ctl_off, board_off, board_entry, sites_off, slots_off, rings_off, total }
    }
    /// Sizes for `n` ranks with staging slots of `slot` bytes (`DIST_SLOT_KIB`, see
    /// `tuning.rs`), but at least a 64-byte line per rank (the collectives give each rank
    /// a region of a slot: past 4096 ranks at the default, 256 with `DIST_SLOT_KIB=16`, a
    /// region would have been empty); rings share 16 MiB, each between 4 KiB and 256 KiB.
    pub(crate) fn for_size(n: usize, slot: usize) -> Layout {
        let r = ((16usize << 20) / (n * n)).clamp(4 << 10, 256 << 10);
        let ring = 1usize << (usize::BITS - 1 - r.leading_zeros()); // round down to a power of two
        Layout::new(n, slot.max(align(64 * n, 4096)), ring)
    }
    pub(crate) fn ctl(&self, r: usize) -> usize {
        self.ctl_off + r * CTL
    }
    pub(crate) fn board(&self, r: usize) -> usize {
        self.board_off + r * self.board_entry
    }
    /// Entry `i` of rank r's table of source files.
    pub(crate) fn site(&self, r: usize, i: usize) -> usize {
        self.sites_off + (r * SITES + i) * SITE_LEN
    }
    pub(crate) fn slot(&self, r: usize, parity: u32) -> usize {
        self.slots_off + (r * 2 + parity as usize) * self.slot
    }
    pub(crate) fn ring(&self, src: usize, dst: usize) -> usize {
        self.rings_off + (src * self.n + dst) * (RING_CTL + self.ring)
    }
}

/// A mapping of a segment. Memory is only touched through atomics or through regions
/// the collective/p2p protocols give to one writer at a time.
pub(crate) struct Segment {
    ptr: *mut u8,
    pub layout: Layout,
    /// Kept open by the creator so members can open it through /proc.
    fd: Option<OwnedFd>,
}

// SAFETY: the mapping is process-wide memory; all shared access goes through atomics or
// through the epoch/ring protocols, which never let two parties touch one byte at once.
unsafe impl Send for Segment {}
// SAFETY: as for `Send`.
unsafe impl Sync for Segment {}

fn os_err(what: &str) -> Error {
    let e = std::io::Error::last_os_error();
    Error::Backend { backend: "shm", msg: format!("{what}: {e}"), source: Some(Box::new(e)) }
}

impl Segment {
    /// Creates and maps a new segment for `layout.n` ranks.
    pub(crate) fn create(name: &str, layout: Layout) -> Result<Segment> {
        let cname = std::ffi::CString::new(name.replace('\0', "")).expect("no NUL");
        // SAFETY: plain syscalls on a fresh fd we own.
        let fd = unsafe { libc::memfd_create(cname.as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(os_err("memfd_create failed"));
        }
        // SAFETY: fd is a fresh, valid descriptor we own from here on.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: valid fd.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), layout.total as libc::off_t) } != 0 {
            return Err(os_err(&format!("cannot size the shared segment to {} bytes", layout.total)));
        }
        let seg = Segment::map(
            &fd,
            layout,
            Some(fd.try_clone().map_err(|e| Error::Backend {
                backend: "shm",
                msg: format!("dup: {e}"),
                source: Some(Box::new(e)),
            })?),
        )?;
        seg.u64_at(0).store(MAGIC, std::sync::atomic::Ordering::SeqCst);
        seg.u64_at(8).store(layout.n as u64, std::sync::atomic::Ordering::SeqCst);
        Ok(seg)
    }

    /// Maps the segment a peer created, given its pid and fd number.
    pub(crate) fn open(pid: u32, fdnum: i32, layout: Layout) -> Result<Segment> {
        let fd = open_peer_fd(pid, fdnum, true, "the segment of rank 0")?;
        let seg = Segment::map(&fd, layout, None)?;
        let magic = seg.u64_at(0).load(std::sync::atomic::Ordering::SeqCst);
        let n = seg.u64_at(8).load(std::sync::atomic::Ordering::SeqCst);
        if magic != MAGIC || n != layout.n as u64 {
            return Err(Error::backend(
                "shm",
                format!("/proc/{pid}/fd/{fdnum} is not a dist segment for {} ranks", layout.n),
            ));
        }
        Ok(seg)
    }

    fn map(fd: &OwnedFd, layout: Layout, keep: Option<OwnedFd>) -> Result<Segment> {
        // SAFETY: mapping a descriptor we hold, shared, with the size it was created with.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                layout.total,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(os_err("mmap of the shared segment failed"));
        }
        Ok(Segment { ptr: ptr as *mut u8, layout, fd: keep })
    }

    /// Faults in, at join, the staging slots' pages, which a communicator's first
    /// collectives would otherwise fault one by one: this rank's own two slots, which
    /// only it writes, allocated by writing (each page's first word gets `fetch_add(0)`,
    /// so nothing changes), and, where the slots of all ranks come to at most 64 MiB, its
    /// mappings of the peers' slots by reading. `MADV_POPULATE_WRITE`/`READ` (Linux 5.14)
    /// do it in one call each; older kernels get the per-page touch. The rings are left
    /// to fault as messages use them (16 MiB per communicator of 8 or more ranks, mostly
    /// never used: sends from 8 KiB are read single-copy).
    pub(crate) fn prefault(&self, rank: usize) {
        let l = self.layout;
        self.populate(l.slot(rank, 0), l.slot(rank, 1) + l.slot, true);
        if l.n * 2 * l.slot <= 64 << 20 {
            self.populate(l.slot(0, 0), l.slot(l.n - 1, 1) + l.slot, false);
        }
    }

    /// Populates the pages of bytes `a..b` (slots: page-aligned) for writing or reading.
    fn populate(&self, a: usize, b: usize, write: bool) {
        debug_assert!(a.is_multiple_of(4096) && b <= self.layout.total);
        let advice = if write { libc::MADV_POPULATE_WRITE } else { libc::MADV_POPULATE_READ };
        // SAFETY: a range inside our own mapping; populating changes no byte.
        let r = unsafe { libc::madvise(self.ptr.add(a) as *mut libc::c_void, b - a, advice) };
        if r == 0 {
            return;
        }
        let mut at = a;
        while at + 8 <= b {
            if write {
                self.u64_at(at).fetch_add(0, std::sync::atomic::Ordering::Relaxed);
            } else {
                self.u64_at(at).load(std::sync::atomic::Ordering::Relaxed);
            }
            at += 4096;
        }
    }

    /// The raw fd number to publish (creator only).
    pub(crate) fn fd_number(&self) -> Option<i32> {
        self.fd.as_ref().map(|f| f.as_raw_fd())
    }

    /// Closes the creator's descriptor once every member has mapped the segment.
    pub(crate) fn forget_fd(&mut self) {
        self.fd = None;
    }

    pub(crate) fn ptr(&self, off: usize) -> *mut u8 {
        debug_assert!(off <= self.layout.total);
        // SAFETY: in bounds of the mapping.
        unsafe { self.ptr.add(off) }
    }

    pub(crate) fn u32_at(&self, off: usize) -> &AtomicU32 {
        debug_assert!(off.is_multiple_of(4) && off + 4 <= self.layout.total);
        // SAFETY: aligned, in bounds, and only ever accessed atomically.
        unsafe { &*(self.ptr(off) as *const AtomicU32) }
    }

    pub(crate) fn u64_at(&self, off: usize) -> &AtomicU64 {
        debug_assert!(off.is_multiple_of(8) && off + 8 <= self.layout.total);
        // SAFETY: aligned, in bounds, and only ever accessed atomically.
        unsafe { &*(self.ptr(off) as *const AtomicU64) }
    }
}

/// Opens memory a peer process holds as descriptor `fdnum` (`/proc/<pid>/fd/<fdnum>`,
/// which the kernel allows only to processes of the same user), read-write or read-only;
/// `what` names it in errors. Refuses a file another user owns: a stranger's memory
/// would let them read and forge this rank's data.
pub(crate) fn open_peer_fd(pid: u32, fdnum: i32, write: bool, what: &str) -> Result<OwnedFd> {
    let path = format!("/proc/{pid}/fd/{fdnum}");
    let f = std::fs::OpenOptions::new().read(true).write(write).open(&path).map_err(|e| {
        let why = match e.raw_os_error() {
            Some(libc::EMFILE) | Some(libc::ENFILE) => {
                "this process is out of file descriptors (raise `ulimit -n`, or close some)".to_string()
            }
            Some(libc::EACCES) | Some(libc::EPERM) => format!(
                "process {pid} belongs to another user, or does not let this one read its descriptors: all \
                 ranks of a shared-memory job run as one user"
            ),
            Some(libc::ENOENT) | Some(libc::ENXIO) => format!(
                "process {pid} or its descriptor {fdnum} is gone (it exited, or the address came from another \
                 job sharing this store: give concurrent jobs their own MASTER_PORT or DIST_JOB_TOKEN), or it \
                 runs on another host or in another PID namespace"
            ),
            _ => "all ranks must run on one machine as one user".to_string(),
        };
        Error::Backend {
            backend: "shm",
            msg: format!("cannot open {what} at {path}: {e}: {why}"),
            source: Some(Box::new(e)),
        }
    })?;
    let fd: OwnedFd = f.into();
    // SAFETY: a zeroed stat is valid; fstat only writes it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a valid descriptor and a valid stat buffer.
    let (rc, me) = unsafe { (libc::fstat(fd.as_raw_fd(), &mut st), libc::geteuid()) };
    if rc == 0 && st.st_uid != me {
        return Err(Error::backend(
            "shm",
            format!(
                "{what} at {path} belongs to uid {}, not to this rank's user (uid {me}): refusing to map \
                 another user's memory (a foreign or forged rendezvous key)",
                st.st_uid
            ),
        ));
    }
    Ok(fd)
}

impl Drop for Segment {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what `map` mapped; no references outlive `self`.
        unsafe {
            libc::munmap(self.ptr as *mut libc::c_void, self.layout.total);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every rank's region of a slot holds at least a line, whatever the slot asked for.
    #[test]
    fn slots_hold_a_line_per_rank() {
        assert_eq!(Layout::for_size(4, 256 << 10).slot, 256 << 10);
        for (n, slot) in [(300, 16 << 10), (5000, 256 << 10), (4096, 256 << 10)] {
            let l = Layout::for_size(n, slot);
            assert!(l.slot / n >= 64 && l.slot.is_multiple_of(4096), "{n} ranks: slot {}", l.slot);
        }
    }

    /// A segment another user owns is refused (a forged rendezvous key cannot make a
    /// rank map a stranger's memory). Needs root to give the segment away; skipped
    /// otherwise.
    #[test]
    fn another_users_segment_is_refused() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("another_users_segment_is_refused: needs root to chown a memfd; skipped");
            return;
        }
        let layout = Layout::new(2, 4096, 4096);
        let seg = Segment::create("dist-test-owner", layout).unwrap();
        let fd = seg.fd_number().unwrap();
        let pid = std::process::id();
        // Ours: maps.
        assert!(Segment::open(pid, fd, layout).is_ok());
        // Given to `nobody`: refused, naming both uids.
        // SAFETY: our own descriptor.
        assert_eq!(unsafe { libc::fchown(fd, 65534, 65534) }, 0);
        let e = Segment::open(pid, fd, layout).map(|_| ()).unwrap_err().to_string();
        assert!(e.contains("belongs to uid 65534") && e.contains("another user's memory"), "{e}");
    }

    /// A descriptor that does not exist says the process or descriptor is gone.
    #[test]
    fn a_gone_descriptor_is_named() {
        let layout = Layout::new(2, 4096, 4096);
        let e = Segment::open(std::process::id(), 987_654, layout).map(|_| ()).unwrap_err().to_string();
        assert!(e.contains("is gone") && e.contains("MASTER_PORT"), "{e}");
    }
}
