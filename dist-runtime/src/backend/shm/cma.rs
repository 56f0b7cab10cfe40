//! Single-copy transfers: reading a peer's user buffer straight into ours with
//! `process_vm_readv` (Linux "cross-memory attach", as OpenMPI's vader CMA), so a large
//! all_gather or all_to_all moves each byte once instead of twice through the slots.
//!
//! The kernel allows it between processes of one user unless a sandbox forbids it
//! (seccomp, Yama `ptrace_scope` ≥ 2). Whether it works is probed once per communicator,
//! collectively, and all ranks agree (a MIN all-reduce), so every rank takes the same
//! path. It is used automatically while ranks ≤ cores; `DIST_CMA=1` forces it (an error
//! where the kernel refuses), `DIST_CMA=0` turns it off; `DIST_CMA_MIN` (bytes, default
//! 16 KiB) is the smallest block that uses it. Point-to-point uses it too, without the
//! probe (see `p2p.rs`).

use super::{segment, ShmComm};
use crate::error::{Error, Result};
use std::sync::atomic::Ordering::SeqCst;

static PROBE: u64 = segment::CMA_MAGIC;

/// The address peers read to probe.
pub(super) fn probe_addr() -> u64 {
    &PROBE as *const u64 as u64
}

/// Broadcasts from this size on go through the slots even where single-copy reads are on:
/// the root's copy in and the readers' copies out overlap there, and out of cache one
/// `process_vm_readv` is slower than that pair (in cache it is the other way). Except at 2
/// ranks, where the root now copies half (`single.rs`, `broadcast_cma`): two cores copy
/// there, and the direct path is ahead at every size measured. Not measured where ranks
/// past two have cores of their own, so they keep this limit; where they outnumber the
/// cores the direct path stays off, being slower there than the slots (measured:
/// docs/performance.md, "Figures behind code choices" and "Small messages in one cache
/// line, a broadcast root that copies too, and the table with checks on").
pub(super) const BROADCAST_MAX: usize = 2 << 20;

/// The largest broadcast that reads the root's buffer directly on a communicator of `n`
/// ranks (see [`BROADCAST_MAX`]).
pub(super) fn broadcast_max(n: usize) -> usize {
    if n == 2 {
        usize::MAX
    } else {
        BROADCAST_MAX
    }
}

/// Which collective asks [`min_block`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Kind {
    Broadcast,
    Gather,
    AllToAll,
}

/// Smallest block (bytes) worth a single-copy read on `c` for a collective of `kind`;
/// `usize::MAX` when off.
///
/// Automatic (`DIST_CMA` unset): from `DIST_CMA_MIN` (16 KiB) while every rank has a
/// core of its own. With more ranks than cores the copies through the slots cannot
/// overlap anyway, and what pays is measured per op (4 and 8 ranks on 2 cores):
/// all_to_all gains from 128 KiB blocks, all_gather only from MiB blocks (at 1 MiB it
/// loses), broadcast never (measured: docs/performance.md, "Figures behind code
/// choices"). `DIST_CMA=1` or `DIST_ALGO=cma` forces it on from `DIST_CMA_MIN`,
/// `DIST_CMA=0` or `DIST_ALGO=copy` off.
pub(super) fn min_block(c: &ShmComm, kind: Kind) -> usize {
    let min = c.cfg.algo.cma_min;
    match (c.cfg.algo.cma, c.oversubscribed) {
        (Some(false), _) => usize::MAX,
        (Some(true), _) | (None, false) => min,
        (None, true) => match kind {
            Kind::Broadcast => usize::MAX,
            Kind::Gather => min.max(1 << 20),
            Kind::AllToAll => min.max(64 << 10),
        },
    }
}

/// Smallest blocking send whose receiver reads it straight from the sender's buffer;
/// `usize::MAX` when single-copy reads are off (`DIST_CMA=0`). Unlike the collectives'
/// reads it stays on when ranks outnumber cores: a message then costs one copy instead
/// of two that could not overlap anyway. No collective probe: a receiver that cannot
/// read declines, and its sender streams that message, and the next ones to it,
/// through the ring (`p2p.rs`).
pub(super) fn p2p_min(c: &ShmComm) -> usize {
    match c.cfg.algo.cma {
        Some(false) => usize::MAX,
        _ => c.cfg.algo.cma_p2p_min.max(1),
    }
}

/// The process id of rank `j` of `c`.
pub(super) fn pid(c: &ShmComm, j: usize) -> u32 {
    c.seg.u32_at(c.seg.layout.ctl(j) + segment::PID).load(SeqCst)
}

/// Reads `dst.len()` bytes at `addr` in process `pid` into `dst`.
pub(super) fn read(pid: u32, addr: u64, dst: &mut [u8]) -> std::io::Result<()> {
    // SAFETY: `dst` is our own writable slice, for the whole call.
    unsafe { transfer(pid, addr, dst.as_mut_ptr(), dst.len(), false) }
}

/// Writes `src` at `addr` in process `pid` (the other direction of [`read`]: a sender
/// helping its receiver copy a message, `p2p.rs`).
pub(super) fn write(pid: u32, addr: u64, src: &[u8]) -> std::io::Result<()> {
    // SAFETY: `src` is our own readable slice, and the kernel only reads it when writing.
    unsafe { transfer(pid, addr, src.as_ptr() as *mut u8, src.len(), true) }
}

/// `process_vm_readv` (or, with `write`, `process_vm_writev`) of `len` bytes between
/// `local` here and `addr` in process `pid`, resumed after partial transfers.
///
/// # Safety
/// `local` is valid for `len` bytes of writes (of reads, with `write`).
unsafe fn transfer(pid: u32, addr: u64, local: *mut u8, len: usize, write: bool) -> std::io::Result<()> {
    let mut done = 0usize;
    while done < len {
        // SAFETY: within the caller's `local` range.
        let here = libc::iovec { iov_base: unsafe { local.add(done) } as *mut libc::c_void, iov_len: len - done };
        let there = libc::iovec { iov_base: (addr as usize + done) as *mut libc::c_void, iov_len: len - done };
        // SAFETY: `here` is this process's memory as the caller promises; the kernel
        // checks `there` against the peer's mappings and fails (EFAULT) rather than
        // touching anything else.
        let n = unsafe {
            if write {
                libc::process_vm_writev(pid as libc::pid_t, &here, 1, &there, 1, 0)
            } else {
                libc::process_vm_readv(pid as libc::pid_t, &here, 1, &there, 1, 0)
            }
        };
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "process_vm_readv/writev moved nothing",
            ));
        }
        done += n as usize;
    }
    Ok(())
}

/// This rank's own verdict: can it read every peer's probe word?
fn probe_local(c: &ShmComm) -> bool {
    (0..c.n).filter(|&r| r != c.rank).all(|r| {
        let ctl = c.seg.layout.ctl(r);
        let pid = c.seg.u32_at(ctl + segment::PID).load(SeqCst);
        let addr = c.seg.u64_at(ctl + segment::CMA_ADDR).load(SeqCst);
        let mut buf = [0u8; 8];
        read(pid, addr, &mut buf).is_ok() && u64::from_le_bytes(buf) == segment::CMA_MAGIC
    })
}

/// Whether an op of `kind` whose block on this rank is `len` bytes takes the single-copy
/// path (`len` in `min_block..max`, and single-copy reads work here: [`usable`]).
pub(super) fn single(
    c: &ShmComm,
    epoch: &mut u32,
    cx: &crate::op::Op,
    kind: Kind,
    len: usize,
    max: usize,
) -> Result<bool> {
    Ok((min_block(c, kind)..max).contains(&len) && usable(c, epoch, cx)?)
}

/// Whether single-copy reads are usable on this communicator (collective on first call:
/// every rank must reach it at the same point, which the callers guarantee by deciding
/// on sizes every rank agrees on).
pub(super) fn usable(c: &ShmComm, epoch: &mut u32, cx: &crate::op::Op) -> Result<bool> {
    match c.cma.load(SeqCst) {
        1 => return Ok(true),
        2 => return Ok(false),
        _ => {}
    }
    // Every peer is past `connect` (its pid and probe address written) only once all
    // have entered this collective: a peer still joining reads as pid 0, and that used to
    // turn single-copy reads off for the communicator's whole life, at random. The
    // barrier carries the op's record: a peer whose length kept it off this path (or in
    // another op altogether) is at its own first barrier, which carries its record, so
    // both name the mismatch there and leave in step (was: "an unknown op at :0", and
    // the ranks out of step for every later collective).
    c.sync(epoch, cx, true)?;
    let mine = probe_local(c);
    let ok = super::slots::all_yes(c, epoch, cx, mine)?;
    c.cma.store(if ok { 1 } else { 2 }, SeqCst);
    if !ok && c.cfg.algo.cma == Some(true) {
        // Forced on (`DIST_CMA=1`, `DIST_ALGO=cma`): say so rather than quietly copying.
        return Err(Error::backend(
            "shm",
            format!(
                "DIST_CMA=1 (or DIST_ALGO=cma) forces single-copy reads, but on {} {} (process_vm_readv refused: \
                 a seccomp sandbox, or Yama ptrace_scope ≥ 2); unset DIST_CMA to let dist choose",
                c.name,
                if mine {
                    format!("a peer of rank {} cannot read this rank's memory", c.rank)
                } else {
                    format!("rank {} cannot read its peers' memory", c.rank)
                }
            ),
        ));
    }
    Ok(ok)
}

pub(super) fn err(peer: usize, e: std::io::Error) -> Error {
    Error::Backend {
        backend: "shm",
        msg: format!("single-copy read from rank {peer} failed: {e} (set DIST_CMA=0 to use the copy-through path)"),
        source: Some(Box::new(e)),
    }
}
