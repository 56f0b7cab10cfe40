//! Memory every rank of a communicator maps (`Comm::alloc`), and the collectives that
//! read it in place.
//!
//! An allocation is one memory file per rank (`memfd_create`), mapped read-write by its
//! owner and read-only by every peer (opened through `/proc/<pid>/fd`, as the segment
//! is; same user only). Allocations are collective, so allocation k is the same on every
//! rank; each rank keeps its view of all n files while its own [`SharedBuf`] lives.
//!
//! **Choosing the path.** Whether a buffer came from an allocation is each rank's own
//! knowledge, so an op that could read in place ([`MIN`] bytes and up) decides at its
//! first barrier, from words every rank publishes in its control block
//! (`segment::SHARED`: the 64-bit barrier count, the allocation and the offset). A rank
//! whose buffer is in an allocation publishes them and arrives at the barrier without
//! doing anything else; a rank whose buffer is not takes its usual path, whose first barrier then looks
//! at the peers' words. After that barrier every rank reads the same n words and comes
//! to the same verdict: all in one allocation — the in-place path; otherwise, if any
//! rank published, every rank restarts the op on its usual path (one barrier more, the
//! op's record compared again: only when ranks mix allocated and other memory). Words
//! carry their barrier count (64 bits: it never wraps), so a word left from an earlier
//! op never counts.
//!
//! **The in-place paths** (each rank reads peers' buffers, writes only its own):
//! broadcast, gathers, all_to_all: read the blocks meant for this rank, then a barrier
//! (no rank may reuse its buffer while a peer still reads it). all_reduce: each rank
//! folds its share of the buffer, in rank order, from every rank's buffer into its own;
//! a barrier; each rank copies the other shares from their owners' buffers; a barrier.
//! That is the least a reduction moves: per rank, n shares read and one written, then
//! n − 1 shares copied — no staging copy in or out. reduce_scatter: fold block r into
//! `recv`, a barrier.
//!
//! [`SharedBuf`]: crate::SharedBuf

use super::{segment, ShmComm};
use crate::backend::{reduce, HeapMem, SharedMem};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::op::Op;
use crate::reduce_op::ReduceOp;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::Ordering::SeqCst;
use std::sync::{Arc, Weak};

/// Smallest buffer (bytes per rank) an op reads in place: below it the staging path's
/// single barrier costs less than the in-place path's two. Measured with `dist-bench
/// -n N --sizes 16K,32K,64K --shared` against the same without `--shared` (N = 2, 4, 8;
/// docs/performance.md, "Zero-copy buffers").
pub(super) const MIN: usize = 16 << 10;

/// The all-reduce's own threshold: its in-place path takes three barriers; below 64 KiB
/// it measured no faster than the staging path (docs/performance.md, "Figures behind
/// code choices").
pub(super) const ALL_REDUCE_MIN: usize = 64 << 10;

/// Largest broadcast read in place while every rank has a core: past it the root's copy
/// into the slots and the reader's copy out, on two cores at once, beat one reader's copy
/// (measured at 64 MiB and 2 ranks: docs/performance.md, "Figures behind code choices").
/// With more ranks than cores every rank copies anyway, and in place wins at every size.
pub(super) const BROADCAST_MAX: usize = 32 << 20;

/// Smallest block of a block-wise op (all_to_all, reduce_scatter) read in place: 2 KiB
/// blocks from 8 peers measured slower than through the slots, 4 KiB faster at every n
/// (docs/performance.md, "Figures behind code choices").
pub(super) const MIN_BLOCK: usize = 4 << 10;

/// Pieces the all-reduce and reduce_scatter fold at a time (stay in cache).
const PIECE: usize = 64 << 10;

/// One allocation as this process sees it: every rank's memory file, mapped.
pub(super) struct Region {
    /// The allocation's number on this communicator (the same on every rank).
    id: u32,
    /// Bytes the user asked for (on every rank).
    bytes: usize,
    /// Bytes mapped (whole pages).
    map_len: usize,
    /// Rank j's memory in this process: this rank's own read-write, peers' read-only.
    bases: Vec<*mut u8>,
    me: usize,
}

// SAFETY: the mappings are process-wide; who touches which bytes when is the protocol's
// business (module docs): peers only read, each rank writes its own.
unsafe impl Send for Region {}
// SAFETY: as for `Send`.
unsafe impl Sync for Region {}

impl Drop for Region {
    fn drop(&mut self) {
        for &b in &self.bases {
            if !b.is_null() {
                // SAFETY: unmapping exactly what `alloc` mapped; nothing outlives `self`.
                unsafe { libc::munmap(b as *mut libc::c_void, self.map_len) };
            }
        }
    }
}

/// What `Comm::alloc` hands out on shm: this rank's memory of one allocation.
struct RegionMem(Arc<Region>);

impl SharedMem for RegionMem {
    fn ptr(&self) -> *mut u8 {
        self.0.bases[self.0.me]
    }
    fn bytes(&self) -> usize {
        self.0.bytes
    }
    fn zero_copy(&self) -> bool {
        true
    }
}

fn os_err(what: String) -> Error {
    let e = std::io::Error::last_os_error();
    Error::Backend { backend: "shm", msg: format!("{what}: {e}"), source: Some(Box::new(e)) }
}

fn map(fd: &OwnedFd, len: usize, write: bool) -> Result<*mut u8> {
    let prot = if write { libc::PROT_READ | libc::PROT_WRITE } else { libc::PROT_READ };
    // SAFETY: mapping a descriptor we hold, shared; the caller checked its size.
    let p = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, libc::MAP_SHARED, fd.as_raw_fd(), 0) };
    if p == libc::MAP_FAILED {
        return Err(os_err(format!("mmap of {len} bytes of a shared buffer failed")));
    }
    Ok(p as *mut u8)
}

/// This rank's memory file of `len` bytes, mapped read-write.
fn create(c: &ShmComm, id: u32, len: usize) -> Result<(OwnedFd, *mut u8)> {
    let name =
        std::ffi::CString::new(format!("dist-{}-{}-buf{id}", c.cfg.job_id, c.id).replace('\0', "")).expect("no NUL");
    // SAFETY: plain syscalls on a fresh fd we own.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(os_err("memfd_create for a shared buffer failed".into()));
    }
    // SAFETY: a fresh descriptor we own from here on.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: a valid descriptor.
    if unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) } != 0 {
        return Err(os_err(format!("cannot size a shared buffer to {len} bytes")));
    }
    let p = map(&fd, len, true)?;
    Ok((fd, p))
}

/// Maps peer `j`'s memory file (descriptor `fdnum` of process `pid`) read-only, after
/// checking it holds `len` bytes (touching past a file's end would be SIGBUS).
fn open_peer(j: usize, pid: u32, fdnum: i32, len: usize) -> Result<*mut u8> {
    let fd = segment::open_peer_fd(pid, fdnum, false, &format!("rank {j}'s shared buffer"))?;
    // SAFETY: a zeroed stat is valid; fstat only writes it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a valid descriptor and stat buffer.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(os_err(format!("fstat of rank {j}'s shared buffer failed")));
    }
    if st.st_size as u64 != len as u64 {
        return Err(Error::backend(
            "shm",
            format!("rank {j}'s shared buffer holds {} bytes where {len} were agreed", st.st_size),
        ));
    }
    map(&fd, len, false)
}

/// `Comm::alloc` on shm (collective; the op record is compared at its first barrier).
pub(super) fn alloc(c: &ShmComm, cx: &Op, bytes: usize) -> Result<Box<dyn SharedMem>> {
    if c.n == 1 || bytes == 0 {
        // Nothing to share: still one barrier, so the record is compared.
        c.barrier(cx)?;
        return Ok(Box::new(HeapMem::new(bytes)?));
    }
    let (n, me) = (c.n, c.rank);
    let mut epoch = super::slots::lock(c);
    let epoch = &mut *epoch;
    let id = c.allocs.fetch_add(1, SeqCst);
    let map_len = bytes.div_ceil(4096) * 4096;
    // The region owns the mappings made so far (its drop unmaps them), whatever fails below.
    let mut region = Region { id, bytes, map_len, bases: vec![std::ptr::null_mut(); n], me };
    let made = create(c, id, map_len);
    let fdnum = match &made {
        Ok((fd, p)) => {
            region.bases[me] = *p;
            fd.as_raw_fd() as i64
        }
        Err(_) => -1,
    };
    super::slots::publish(c, *epoch, &[fdnum as u64]);
    c.sync(epoch, cx, true)?;
    let mut failed: Option<Error> = made.as_ref().err().map(|e| Error::backend("shm", e.to_string()));
    for j in (0..n).filter(|&j| j != me) {
        let theirs = super::slots::published(c, *epoch, j, 0) as i64;
        if theirs < 0 || failed.is_some() {
            continue;
        }
        match open_peer(j, super::cma::pid(c, j), theirs as i32, map_len) {
            Ok(p) => region.bases[j] = p,
            Err(e) => failed = Some(e),
        }
    }
    // Every rank has mapped every file it could (so the owners may close theirs), and
    // all learn whether every rank has all n.
    let ok = super::slots::all_yes(c, epoch, cx, failed.is_none())?;
    drop(made);
    if let Some(e) = failed {
        return Err(e);
    }
    if !ok {
        return Err(Error::backend(
            "shm",
            format!("alloc at {}: another rank of {} could not map this allocation (see its error)", cx.site, c.name),
        ));
    }
    let region = Arc::new(region);
    let mut regions = c.regions.lock().unwrap_or_else(|p| p.into_inner());
    regions.retain(|w| w.strong_count() > 0);
    regions.push(Arc::downgrade(&region));
    Ok(Box::new(RegionMem(region)))
}

/// Whether any allocation was ever made on `c`: the same answer on every rank between
/// ops, since allocating is collective. Without one, no op looks for peers' words, so
/// programs that never allocate pay nothing for the in-place paths.
pub(super) fn any(c: &ShmComm) -> bool {
    c.allocs.load(SeqCst) > 0
}

/// This rank's buffer of one op, found in one of its live allocations.
pub(super) struct Mine {
    region: Arc<Region>,
    off: usize,
}

/// Whether `buf` lies in one of this communicator's live allocations.
pub(super) fn find(c: &ShmComm, buf: &[u8]) -> Option<Mine> {
    let p = buf.as_ptr() as usize;
    let regions = c.regions.lock().unwrap_or_else(|p| p.into_inner());
    regions.iter().filter_map(Weak::upgrade).find_map(|region| {
        let base = region.bases[region.me] as usize;
        (p >= base && p + buf.len() <= base + region.bytes).then(|| Mine { off: p - base, region })
    })
}

/// Every rank's buffer of one op, in this process (peers' read-only).
pub(super) struct Peers {
    ptrs: Vec<*const u8>,
    /// Keeps the mappings for the op's length.
    _region: Arc<Region>,
}

impl Peers {
    /// `len` bytes at `at` of rank j's buffer (bounds checked at [`begin`]).
    fn of(&self, j: usize, at: usize, len: usize) -> &[u8] {
        // SAFETY: in bounds of rank j's mapping (checked at `begin`); rank j does not
        // write these bytes until the barrier that ends the op (module docs).
        unsafe { std::slice::from_raw_parts(self.ptrs[j].add(at), len) }
    }
}

fn publish_words(c: &ShmComm, serial: u64, id: u32, off: usize) {
    let ctl = c.seg.layout.ctl(c.rank) + segment::SHARED;
    c.seg.u64_at(ctl + 16).store(off as u64, SeqCst);
    c.seg.u64_at(ctl + 8).store(id as u64 + 1, SeqCst);
    c.seg.u64_at(ctl).store(serial, SeqCst);
}

/// Rank j's published (allocation + 1, offset) for the barrier just passed, or None.
/// Words carry the 64-bit barrier count they are for, so a word left from any earlier
/// op never passes for this one.
fn words(c: &ShmComm, j: usize) -> Option<(u32, usize)> {
    let ctl = c.seg.layout.ctl(j) + segment::SHARED;
    (c.seg.u64_at(ctl).load(SeqCst) == c.barriers.load(SeqCst))
        .then(|| (c.seg.u64_at(ctl + 8).load(SeqCst) as u32, c.seg.u64_at(ctl + 16).load(SeqCst) as usize))
}

/// After the first barrier of an op's usual path: whether a peer published an allocated
/// buffer for it (then every rank restarts the op on its usual path).
pub(super) fn published(c: &ShmComm) -> bool {
    (0..c.n).any(|j| j != c.rank && words(c, j).is_some())
}

/// The in-place start of an op for a rank whose buffer is `mine`: publishes it and
/// arrives at the op's first barrier (its record compared). Returns every rank's buffer
/// if all lie in the same allocation, each holding `need(j)` bytes from its offset;
/// otherwise `None`, and the caller runs the op's usual path from its start.
pub(super) fn begin(
    c: &ShmComm,
    epoch: &mut u32,
    cx: &Op,
    mine: Mine,
    need: impl Fn(usize) -> usize,
) -> Result<Option<Peers>> {
    publish_words(c, c.barriers.load(SeqCst) + 1, mine.region.id, mine.off);
    c.sync(epoch, cx, true)?;
    let want = mine.region.id + 1;
    let mut ptrs = Vec::with_capacity(c.n);
    for j in 0..c.n {
        match words(c, j) {
            Some((id, off)) if id == want => {
                if off.checked_add(need(j)).is_none_or(|end| end > mine.region.bytes) {
                    return Err(Error::Mismatch {
                        comm: c.name.clone(),
                        msg: format!(
                            "{}: rank {j}'s buffer ({} bytes at offset {off} of allocation #{}) runs past the \
                             allocation's {} bytes",
                            cx.describe(cx.site.0.file(), cx.site.0.line()),
                            need(j),
                            mine.region.id,
                            mine.region.bytes
                        ),
                    });
                }
                ptrs.push(mine.region.bases[j].wrapping_add(off) as *const u8);
            }
            _ => return Ok(None),
        }
    }
    Ok(Some(Peers { ptrs, _region: mine.region }))
}

/// Broadcast: every reader copies the root's buffer.
pub(super) fn broadcast(c: &ShmComm, epoch: &mut u32, cx: &Op, buf: &mut [u8], root: usize, p: &Peers) -> Result<()> {
    if c.rank != root {
        super::copy::copy_slice(buf, p.of(root, 0, buf.len()));
    }
    c.sync(epoch, cx, false)
}

/// Gather / all-gather: `recv` (where given) takes every peer's `counts[j]` bytes.
pub(super) fn gather(
    c: &ShmComm,
    epoch: &mut u32,
    cx: &Op,
    recv: Option<&mut [u8]>,
    (counts, displs): (&[usize], &[usize]),
    p: &Peers,
) -> Result<()> {
    if let Some(recv) = recv {
        for j in (0..c.n).filter(|&j| j != c.rank) {
            super::copy::copy_slice(&mut recv[displs[j]..displs[j] + counts[j]], p.of(j, 0, counts[j]));
        }
    }
    c.sync(epoch, cx, false)
}

/// All-to-all of `m`-byte blocks: block `me` of every rank's buffer.
pub(super) fn all_to_all(c: &ShmComm, epoch: &mut u32, cx: &Op, recv: &mut [u8], m: usize, p: &Peers) -> Result<()> {
    let me = c.rank;
    for j in 0..c.n {
        super::copy::copy_slice(&mut recv[j * m..(j + 1) * m], p.of(j, me * m, m));
    }
    c.sync(epoch, cx, false)
}

/// `out = src(0) ⊕ … ⊕ src(k − 1)` in rank order, piece by piece (no finishing step);
/// `src(j, at, len)` is rank j's `len` bytes at `at` of what is folded.
fn fold<'a>(out: &mut [u8], k: usize, dtype: DType, op: ReduceOp, src: impl Fn(usize, usize, usize) -> &'a [u8]) {
    let unit = super::slots::unit(dtype, op);
    let piece = super::slots::whole(PIECE, unit).max(unit);
    let mut s = 0;
    while s < out.len() {
        let e = out.len().min(s + piece);
        let acc = &mut out[s..e];
        super::copy::copy_slice(acc, src(0, s, e - s));
        for j in 1..k {
            reduce::reduce_into(dtype, op, acc, src(j, s, e - s));
        }
        s = e;
    }
}

/// Reduce-scatter: `recv` takes block `me` (at `displs[me]`) of every rank's buffer, folded.
#[allow(clippy::too_many_arguments)]
pub(super) fn reduce_scatter(
    c: &ShmComm,
    epoch: &mut u32,
    cx: &Op,
    recv: &mut [u8],
    at: usize,
    dtype: DType,
    op: ReduceOp,
    p: &Peers,
) -> Result<()> {
    fold(recv, c.n, dtype, op, |j, s, len| p.of(j, at + s, len));
    reduce::finish(dtype, op, c.n, recv);
    c.sync(epoch, cx, false)
}

/// All-reduce in place: fold this rank's share from every buffer into its own, then
/// copy the other shares from their owners (module docs).
pub(super) fn all_reduce(
    c: &ShmComm,
    epoch: &mut u32,
    cx: &Op,
    buf: &mut [u8],
    dtype: DType,
    op: ReduceOp,
    p: &Peers,
) -> Result<()> {
    let (n, me, b) = (c.n, c.rank, buf.len());
    let unit = super::slots::unit(dtype, op);
    let (ps, pe) = super::slots::part(b, unit, n, me);
    let piece = super::slots::whole(PIECE, unit).max(unit).min(pe - ps);
    let commutes = reduce::commutes(dtype, op);
    // Where the order allows, the fold runs in this rank's own buffer: rank 0's share
    // starts with its own contribution; any other rank's, for an op that commutes, with
    // its own, then the fold of the ranks before it (rank 0's buffer alone for rank 1),
    // then those after it. Otherwise the fold goes to a scratch piece, then home.
    // u128 words: the reduction kernels need the element type's alignment (up to 16).
    let mut words = vec![0u128; if me == 0 || (commutes && me == 1) { 0 } else { piece.div_ceil(16) }];
    let scratch = bytemuck::cast_slice_mut::<u128, u8>(&mut words);
    let mut s = ps;
    while s < pe {
        let e = pe.min(s + piece);
        let after = |acc: &mut [u8]| {
            for j in me + 1..n {
                reduce::reduce_into(dtype, op, acc, p.of(j, s, e - s));
            }
            reduce::finish(dtype, op, n, acc);
        };
        if me == 0 {
            after(&mut buf[s..e]);
        } else if commutes {
            if me == 1 {
                reduce::reduce_into(dtype, op, &mut buf[s..e], p.of(0, s, e - s));
            } else {
                let before = &mut scratch[..e - s];
                fold(before, me, dtype, op, |j, x, len| p.of(j, s + x, len));
                reduce::reduce_into(dtype, op, &mut buf[s..e], before);
            }
            after(&mut buf[s..e]);
        } else {
            let tmp = &mut scratch[..e - s];
            super::copy::copy_slice(tmp, p.of(0, s, e - s));
            for j in 1..n {
                if j == me {
                    reduce::reduce_into(dtype, op, tmp, &buf[s..e]);
                } else {
                    reduce::reduce_into(dtype, op, tmp, p.of(j, s, e - s));
                }
            }
            reduce::finish(dtype, op, n, tmp);
            super::copy::copy_slice(&mut buf[s..e], tmp);
        }
        s = e;
    }
    c.sync(epoch, cx, false)?;
    for j in (0..n).filter(|&j| j != me) {
        let (js, je) = super::slots::part(b, unit, n, j);
        super::copy::copy_slice(&mut buf[js..je], p.of(j, js, je - js));
    }
    c.sync(epoch, cx, false)
}
