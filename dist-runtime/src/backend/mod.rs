//! Backends move bytes. One object-safe trait; `Comm<G>` is the typed face over it.
//!
//! A backend never sees user types: buffers arrive as `&[u8]`/`&mut [u8]` holding whole
//! elements of a [`DType`], aligned for it, with every length already validated by `comm`.

#[cfg(feature = "nccl")]
pub(crate) mod nccl;
pub(crate) mod reduce;
pub(crate) mod shm;
pub(crate) mod trace;

use crate::dtype::DType;
use crate::error::{Result, Site};
use crate::op::Op;

/// The buffers of one collective, by shape. Lengths are in bytes, already validated.
pub(crate) enum Bufs<'a> {
    /// `barrier`.
    None,
    /// `broadcast`, `reduce`, `all_reduce`: in place (a reduce leaves non-roots' as is).
    InPlace(&'a mut [u8]),
    /// `gather(_v)` (`recv` on the root only) and `all_gather(_v)` (`recv` everywhere):
    /// `counts[j]` bytes from rank j land at offset `Σ_{i<j} counts[i]` of `recv`.
    Gather { send: &'a [u8], recv: Option<&'a mut [u8]>, counts: &'a [usize] },
    /// `scatter`: the root's `send` holds `size` blocks of `recv.len()` bytes.
    Scatter { send: Option<&'a [u8]>, recv: &'a mut [u8] },
    /// `reduce_scatter`: `send` holds `size` blocks of `recv.len()` bytes; rank j gets
    /// the reduction of block j.
    ReduceScatter { send: &'a [u8], recv: &'a mut [u8] },
    /// `all_to_all(_v)`: block j of `send` (`send_counts[j]` bytes) goes to rank j; block
    /// i of `recv` (`recv_counts[i]` bytes) comes from rank i.
    AllToAll { send: &'a [u8], send_counts: &'a [usize], recv: &'a mut [u8], recv_counts: &'a [usize] },
}

impl Bufs<'_> {
    /// Bytes this rank contributes (for traces).
    pub(crate) fn bytes(&self) -> usize {
        match self {
            Bufs::None => 0,
            Bufs::InPlace(b) => b.len(),
            Bufs::Gather { send, .. } | Bufs::ReduceScatter { send, .. } | Bufs::AllToAll { send, .. } => send.len(),
            Bufs::Scatter { recv, .. } => recv.len(),
        }
    }
}

/// The error for a kind given buffers of the wrong shape: a bug in the typed layer.
pub(crate) fn wrong_shape(backend: &'static str, op: &Op) -> crate::error::Error {
    crate::error::Error::backend(
        backend,
        format!("internal error: {} was handed buffers of another op's shape", op.name),
    )
}

/// Identifies a posted non-blocking send or receive inside a backend.
pub(crate) type ReqId = u64;

/// The contract every backend fulfils. All lengths are in bytes and already validated.
pub(crate) trait Backend: Send + Sync {
    /// Backend name for messages ("shm", "nccl").
    fn kind(&self) -> &'static str;
    fn rank(&self) -> usize;
    fn size(&self) -> usize;

    /// Whether this backend compares op records itself (on its own barriers) under
    /// `DIST_DEBUG=check`; otherwise the typed layer exchanges them with one all-gather
    /// through [`run`](Backend::run) before each op (`comm::agree`).
    fn piggybacks_agreement(&self) -> bool {
        false
    }

    /// Runs one collective. `op` says which (kind, dtype, root, reduce op: the dispatch
    /// key) and is the record peers compare under `DIST_DEBUG=check`; `bufs` has the
    /// shape its kind takes (anything else is a bug in `comm`, reported as an error).
    fn run(&self, op: &Op, bufs: Bufs<'_>) -> Result<()>;

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
