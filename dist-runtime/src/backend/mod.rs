//! Backends move bytes. One object-safe trait; `Comm<G>` is the typed face over it.
//!
//! A backend never sees user types: buffers arrive as `&[u8]`/`&mut [u8]` holding whole
//! elements of a [`DType`], aligned for it, with every length already validated by `comm`.

pub(crate) mod reduce;
pub(crate) mod shm;
pub(crate) mod trace;

use crate::dtype::DType;
use crate::error::{Result, Site};
use crate::op::Op;
use crate::reduce_op::ReduceOp;

/// Identifies a posted non-blocking send or receive inside a backend.
pub(crate) type ReqId = u64;

/// The contract every backend fulfils. All lengths are in bytes and already validated.
pub(crate) trait Backend: Send + Sync {
    /// Backend name for messages ("shm", "nccl").
    fn kind(&self) -> &'static str;
    fn rank(&self) -> usize;
    fn size(&self) -> usize;

    fn barrier(&self, cx: &Op) -> Result<()>;
    fn broadcast(&self, cx: &Op, buf: &mut [u8], root: usize) -> Result<()>;
    /// Reduces into `buf` on `root`; other ranks' `buf` is left as it was.
    fn reduce(&self, cx: &Op, buf: &mut [u8], dtype: DType, op: ReduceOp, root: usize) -> Result<()>;
    fn all_reduce(&self, cx: &Op, buf: &mut [u8], dtype: DType, op: ReduceOp) -> Result<()>;
    /// `counts[j]` bytes from rank j land at offset `Σ_{i<j} counts[i]` of `recv`.
    /// `recv` is `None` exactly on non-roots when `root` is `Some` (gather).
    fn gather_v(
        &self,
        cx: &Op,
        send: &[u8],
        recv: Option<&mut [u8]>,
        counts: &[usize],
        root: Option<usize>,
    ) -> Result<()>;
    /// Root's `send` holds `size` blocks of `recv.len()` bytes; block j goes to rank j.
    fn scatter(&self, cx: &Op, send: Option<&[u8]>, recv: &mut [u8], root: usize) -> Result<()>;
    /// `send` holds `size` blocks of `recv.len()` bytes; rank j gets the reduction of block j.
    fn reduce_scatter(&self, cx: &Op, send: &[u8], recv: &mut [u8], dtype: DType, op: ReduceOp) -> Result<()>;
    /// Block j of `send` (`send_counts[j]` bytes) goes to rank j; block i of `recv`
    /// (`recv_counts[i]` bytes) comes from rank i. Count agreement is checked across ranks.
    fn all_to_all_v(
        &self,
        cx: &Op,
        send: &[u8],
        send_counts: &[usize],
        recv: &mut [u8],
        recv_counts: &[usize],
    ) -> Result<()>;

    /// Blocking send: returns once `data` may be reused (it has been buffered or delivered).
    fn send(&self, site: Site, dst: usize, tag: u32, dtype: DType, data: &[u8]) -> Result<()>;
    /// Blocking receive of exactly `buf.len()` bytes of `dtype` with `tag` from `src`.
    fn recv(&self, site: Site, src: usize, tag: u32, dtype: DType, buf: &mut [u8]) -> Result<()>;
    /// Starts a send; the backend copies whatever it cannot hand over at once, so `data`
    /// is free again when this returns (the borrow held by the user's handle is for
    /// torch-compatible semantics, not for safety).
    fn post_send(&self, site: Site, dst: usize, tag: u32, dtype: DType, data: &[u8]) -> Result<ReqId>;
    /// Claims the next message from `src` with `tag` (matching follows posting order).
    fn post_recv(&self, site: Site, src: usize, tag: u32) -> Result<ReqId>;
    fn wait_send(&self, site: Site, id: ReqId) -> Result<()>;
    fn wait_recv(&self, site: Site, id: ReqId, dtype: DType, buf: &mut [u8]) -> Result<()>;

    /// Collective over this communicator: builds a child communicator of the ranks
    /// `members` (in this communicator's numbering, in child-rank order) if this rank is
    /// one of them. `key` names the child uniquely among this communicator's children.
    fn create_child(&self, cx: &Op, key: &str, members: &[usize]) -> Result<Option<Box<dyn Backend>>>;

    /// Marks this rank as finished in this communicator (peers still waiting on it get an error).
    fn finish(&self);
}
