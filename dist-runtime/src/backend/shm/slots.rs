//! The slot primitives every collective of this backend is built from (the protocol is in
//! README.md, "Collectives"): the communicator's collective lock and epoch, the two
//! parities of a rank's staging slot, copies into this rank's slot and out of a peer's,
//! words published for the peers to read after the next barrier, and a one-flag
//! agreement (every rank learns whether all said yes) for the setup steps of single-copy
//! paths and shared allocations.

use super::ShmComm;
use crate::dtype::DType;
use crate::error::Result;
use crate::op::Op;
use crate::reduce_op::ReduceOp;
use std::sync::MutexGuard;

/// The communicator's collective lock, holding its epoch.
pub(super) fn lock(c: &ShmComm) -> MutexGuard<'_, u32> {
    c.coll.lock().unwrap_or_else(|p| p.into_inner())
}

#[inline]
pub(super) fn to_shm(dst: *mut u8, src: &[u8]) {
    // SAFETY: callers pass a region of their own slot of the write parity, which no peer
    // reads until this rank arrives at the next epoch.
    unsafe { super::copy::copy(dst, src.as_ptr(), src.len()) }
}

#[inline]
pub(super) fn from_shm(dst: &mut [u8], src: *const u8) {
    // SAFETY: callers pass a region of a peer's slot of the read parity, which that peer
    // wrote before arriving at the epoch we waited for and won't touch until we arrive.
    unsafe { super::copy::copy(dst.as_mut_ptr(), src, dst.len()) }
}

/// A read-only view of a peer's region of the read parity (same contract as `from_shm`).
#[inline]
pub(super) fn shm<'a>(p: *const u8, len: usize) -> &'a [u8] {
    // SAFETY: see `from_shm`; the region stays unchanged while the view is used.
    unsafe { std::slice::from_raw_parts(p, len) }
}

/// A writable view of this rank's own region of the write parity (contract of `to_shm`).
#[inline]
pub(super) fn shm_mut<'a>(p: *mut u8, len: usize) -> &'a mut [u8] {
    // SAFETY: see `to_shm`.
    unsafe { std::slice::from_raw_parts_mut(p, len) }
}

/// (write, read) parities of a step at `epoch`: this rank writes its slot of the first,
/// and reads peers' slots of the second (written before the barrier that ended `epoch`).
pub(super) fn parities(epoch: u32) -> (u32, u32) {
    (epoch.wrapping_add(1) % 2, epoch % 2)
}

/// Splits `len` bytes of `es`-byte elements into `n` near-equal parts; returns part j.
pub(super) fn part(len: usize, es: usize, n: usize, j: usize) -> (usize, usize) {
    let ce = len / es;
    ((ce * j / n) * es, (ce * (j + 1) / n) * es)
}

/// `x` rounded down to a whole number of 64-byte lines that is also a whole number of
/// `unit`-byte items (a user reduction's items must never be cut by a chunk).
pub(super) fn whole(x: usize, unit: usize) -> usize {
    let mut step: usize = 64;
    while !step.is_multiple_of(unit) {
        step += 64;
    }
    x / step * step
}

/// Bytes of the smallest piece a reduction with `op` may be cut into.
pub(super) fn unit(dtype: DType, op: ReduceOp) -> usize {
    dtype.size() * op.width()
}

/// Publishes `words` (addresses, offsets) in this rank's write-parity slot.
pub(super) fn publish(c: &ShmComm, epoch: u32, words: &[u64]) {
    let (w, _) = parities(epoch);
    to_shm(c.slot(c.rank, w), bytemuck::cast_slice(words));
}

/// Word `k` of what rank j published in the step just completed (no copy of the rest:
/// this is on every single-copy op's path, once or twice per peer).
pub(super) fn published(c: &ShmComm, epoch: u32, j: usize, k: usize) -> u64 {
    let (_, r) = parities(epoch);
    // SAFETY: word k of rank j's slot of the read parity, which j wrote before arriving at
    // the epoch we waited for and won't touch until we arrive (`from_shm`'s contract); the
    // callers read no further than what `publish` wrote, inside the slot.
    unsafe { std::ptr::read_unaligned(c.slot(j, r).add(8 * k) as *const u64) }
}

/// Whether every rank of `c` says yes: each publishes its flag, one barrier (carrying
/// `cx`'s record, so ranks in different ops name the mismatch here), and each reads
/// all the flags. Collective: every rank calls it at the same point.
pub(super) fn all_yes(c: &ShmComm, epoch: &mut u32, cx: &Op, yes: bool) -> Result<bool> {
    publish(c, *epoch, &[yes as u64]);
    c.sync(epoch, cx, true)?;
    Ok((0..c.n).all(|j| published(c, *epoch, j, 0) != 0))
}
