//! Backends move bytes. One object-safe trait; `Comm<G>` is the typed face over it.
//!
//! A backend never sees user types: buffers arrive as `&[u8]`/`&mut [u8]` holding whole
//! elements of a [`DType`], aligned for it, with every length already validated by `comm`.

pub(crate) mod shm;
pub(crate) mod trace;

use crate::dtype::DType;
use crate::error::{Result, Site};
use crate::op::ReduceOp;

/// What kind of collective a fingerprint describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum OpKind {
    Barrier = 1,
    Broadcast,
    Reduce,
    AllReduce,
    AllGather,
    Gather,
    Scatter,
    ReduceScatter,
    AllToAll,
    CommCreate,
}

impl OpKind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            OpKind::Barrier => "barrier",
            OpKind::Broadcast => "broadcast",
            OpKind::Reduce => "reduce",
            OpKind::AllReduce => "all_reduce",
            OpKind::AllGather => "all_gather",
            OpKind::Gather => "gather",
            OpKind::Scatter => "scatter",
            OpKind::ReduceScatter => "reduce_scatter",
            OpKind::AllToAll => "all_to_all",
            OpKind::CommCreate => "communicator creation",
        }
    }

    pub(crate) fn from_u8(v: u8) -> Option<OpKind> {
        use OpKind::*;
        [Barrier, Broadcast, Reduce, AllReduce, AllGather, Gather, Scatter, ReduceScatter, AllToAll, CommCreate]
            .into_iter()
            .find(|k| *k as u8 == v)
    }
}

/// The part of a collective call that every rank of the communicator must agree on,
/// plus where it was called (for messages).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Fingerprint {
    pub kind: OpKind,
    pub dtype: Option<DType>,
    /// Element count every rank must pass identically (0 where counts legitimately differ).
    pub count: u64,
    pub root: u32,
    pub op: u64,
    /// Hash of anything else that must agree (count vectors of the `_v` forms).
    pub extra: u64,
    pub site: Site,
}

impl Fingerprint {
    #[track_caller]
    pub(crate) fn new(kind: OpKind) -> Fingerprint {
        Fingerprint { kind, dtype: None, count: 0, root: u32::MAX, op: 0, extra: 0, site: Site::caller() }
    }
    pub(crate) fn dtype(mut self, d: DType) -> Self {
        self.dtype = Some(d);
        self
    }
    pub(crate) fn count(mut self, c: usize) -> Self {
        self.count = c as u64;
        self
    }
    pub(crate) fn root(mut self, r: usize) -> Self {
        self.root = r as u32;
        self
    }
    pub(crate) fn op(mut self, op: ReduceOp) -> Self {
        self.op = op.code();
        self
    }
    pub(crate) fn extra(mut self, e: u64) -> Self {
        self.extra = e;
        self
    }
    pub(crate) fn agrees(&self, o: &Fingerprint) -> bool {
        self.kind == o.kind
            && self.dtype == o.dtype
            && self.count == o.count
            && self.root == o.root
            && self.op == o.op
            && self.extra == o.extra
    }
    /// "all_reduce(f32 × 1024, op=sum) at src/main.rs:12"
    pub(crate) fn describe(&self, file: &str, line: u32) -> String {
        let mut s = self.kind.name().to_string();
        let mut args = Vec::new();
        if let Some(d) = self.dtype {
            args.push(format!("{d} × {}", self.count));
        } else if self.count != 0 {
            args.push(format!("{} elements", self.count));
        }
        if self.root != u32::MAX {
            args.push(format!("root={}", self.root));
        }
        if self.op != 0 {
            let name = match self.op {
                1 => "sum",
                2 => "prod",
                3 => "max",
                4 => "min",
                5 => "avg",
                _ => "premulsum",
            };
            args.push(format!("op={name}"));
        }
        if self.extra != 0 {
            args.push(format!("counts#{:x}", self.extra & 0xffff));
        }
        s.push('(');
        s.push_str(&args.join(", "));
        s.push(')');
        s.push_str(&format!(" at {file}:{line}"));
        s
    }
}

/// Per-call context: the op's name and fingerprint (for checks and messages).
#[derive(Clone, Copy, Debug)]
pub(crate) struct OpCtx {
    pub name: &'static str,
    pub fp: Fingerprint,
}

/// Identifies a posted non-blocking send or receive inside a backend.
pub(crate) type ReqId = u64;

/// The contract every backend fulfils. All lengths are in bytes and already validated.
pub(crate) trait Backend: Send + Sync {
    /// Backend name for messages ("shm", "nccl").
    fn kind(&self) -> &'static str;
    fn rank(&self) -> usize;
    fn size(&self) -> usize;

    fn barrier(&self, cx: &OpCtx) -> Result<()>;
    fn broadcast(&self, cx: &OpCtx, buf: &mut [u8], root: usize) -> Result<()>;
    /// Reduces into `buf` on `root`; other ranks' `buf` is left as it was.
    fn reduce(&self, cx: &OpCtx, buf: &mut [u8], dtype: DType, op: ReduceOp, root: usize) -> Result<()>;
    fn all_reduce(&self, cx: &OpCtx, buf: &mut [u8], dtype: DType, op: ReduceOp) -> Result<()>;
    /// `counts[j]` bytes from rank j land at offset `Σ_{i<j} counts[i]` of `recv`.
    /// `recv` is `None` exactly on non-roots when `root` is `Some` (gather).
    fn gather_v(
        &self,
        cx: &OpCtx,
        send: &[u8],
        recv: Option<&mut [u8]>,
        counts: &[usize],
        root: Option<usize>,
    ) -> Result<()>;
    /// Root's `send` holds `size` blocks of `recv.len()` bytes; block j goes to rank j.
    fn scatter(&self, cx: &OpCtx, send: Option<&[u8]>, recv: &mut [u8], root: usize) -> Result<()>;
    /// `send` holds `size` blocks of `recv.len()` bytes; rank j gets the reduction of block j.
    fn reduce_scatter(&self, cx: &OpCtx, send: &[u8], recv: &mut [u8], dtype: DType, op: ReduceOp) -> Result<()>;
    /// Block j of `send` (`send_counts[j]` bytes) goes to rank j; block i of `recv`
    /// (`recv_counts[i]` bytes) comes from rank i. Count agreement is checked across ranks.
    fn all_to_all_v(
        &self,
        cx: &OpCtx,
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
    fn create_child(&self, cx: &OpCtx, key: &str, members: &[usize]) -> Result<Option<Box<dyn Backend>>>;

    /// Marks this rank as finished in this communicator (peers still waiting on it get an error).
    fn finish(&self);
}
