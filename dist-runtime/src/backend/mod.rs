//! Backends move bytes. One object-safe trait; `Comm<G>` is the typed face over it.
//!
//! A backend never sees user types: buffers arrive as `&[u8]`/`&mut [u8]` holding whole
//! elements of a [`DType`], aligned for it, with every length already validated by `comm`.

pub(crate) mod agree;
#[cfg(feature = "mpi")]
pub(crate) mod mpi;
#[cfg(feature = "nccl")]
pub(crate) mod nccl;
pub(crate) mod reduce;
pub(crate) mod shape;
pub(crate) mod shm;
#[cfg(feature = "sim-device")]
pub(crate) mod sim;
pub(crate) mod trace;

use crate::dtype::DType;
use crate::error::{Error, Result, Site};
use crate::op::Op;

pub(crate) use shape::{Bufs, DevBufs, Layout, Shape};

thread_local! {
    static BACKGROUND: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Marks this thread as a background one (a communicator's non-blocking worker): its
/// waits never spin, because the thread it serves is computing, on the core a spin
/// would take.
pub(crate) fn set_background() {
    BACKGROUND.with(|b| b.set(true));
}

/// Whether this thread is a background one (see [`set_background`]).
pub(crate) fn background() -> bool {
    BACKGROUND.with(|b| b.get())
}

/// User threads of this process waiting, right now, for a background worker's op (a
/// non-blocking collective's `wait`, a blocking collective draining those before it).
static PARKED: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Runs `f`, a wait of this user thread for the background worker: while it lasts, the
/// worker's waits are this rank's (the rank is blocked if the worker is), so a deadlock
/// through an `all_reduce_async(..).wait()` is named as the blocking form's is.
pub(crate) fn parked<R>(f: impl FnOnce() -> R) -> R {
    use std::sync::atomic::Ordering::SeqCst;
    PARKED.fetch_add(1, SeqCst);
    let r = f();
    PARKED.fetch_sub(1, SeqCst);
    r
}

/// Whether a wait on this thread says what the rank waits on: a user thread's always; a
/// background worker's only while a user thread is parked on it (otherwise the user
/// thread runs, and may release what the worker waits for).
pub(crate) fn wait_is_the_ranks() -> bool {
    !background() || PARKED.load(std::sync::atomic::Ordering::SeqCst) > 0
}

/// A device buffer resolved for one op: its address on the device and its length.
#[derive(Clone, Copy, Debug)]
#[cfg_attr(not(any(feature = "sim-device", feature = "nccl")), allow(dead_code))]
pub(crate) struct DevPtr {
    pub(crate) addr: u64,
    pub(crate) bytes: usize,
}

/// The device side of a communicator: one object-safe trait, as [`Backend`] is for host
/// memory. NCCL implements it (`backend/nccl/`), and so does the simulated device the
/// tests use (`backend/sim.rs`). Ops are enqueued in call order on the device's stream
/// and complete asynchronously; the typed layer checks arguments, compares the `Op`
/// across ranks and bounds every wait by `DIST_TIMEOUT` (`comm/device.rs`).
pub(crate) trait Device: Send + Sync {
    /// "nccl", "sim".
    fn kind(&self) -> &'static str;
    /// Enqueues one op (`op.kind` says which; a `P2p` group for send/recv/batch).
    fn enqueue(&self, op: &Op, dtype: DType, bufs: DevBufs) -> Result<Box<dyn Completion>>;
    /// A wait on one of its ops timed out: the device holds work that will never finish,
    /// so it refuses new ops and is aborted rather than finalized.
    fn abort(&self);
    /// Whether [`abort`](Device::abort) was called.
    fn broken(&self) -> bool;
    /// Collective over the parent: ranks passing `Some(color)` form one device
    /// communicator per color, ordered by `key`.
    fn split(&self, color: Option<u32>, key: usize) -> Result<Option<Box<dyn Device>>>;
    /// The CUDA stream its ops go on (NCCL); an error naming `op` elsewhere.
    #[cfg(feature = "nccl")]
    fn cuda_stream(&self, op: &'static str) -> Result<&std::sync::Arc<cudarc::driver::CudaStream>>;
}

/// The completion of one device op.
pub(crate) trait Completion: Send + Sync {
    /// Whether the op has completed (an error if it failed).
    fn done(&self) -> Result<bool>;
    /// Called once, after `done()` said so, while the op's buffers are still borrowed:
    /// the simulated device copies its results back here.
    fn finish(&mut self) -> Result<()> {
        Ok(())
    }
    /// The CUDA event recorded after the op, for stream waits.
    #[cfg(feature = "nccl")]
    fn event(&self) -> Option<&cudarc::driver::CudaEvent> {
        None
    }
}

/// The error for a kind given buffers of the wrong shape: a bug in the typed layer.
pub(crate) fn wrong_shape(backend: &'static str, op: &Op) -> crate::error::Error {
    crate::error::Error::backend(
        backend,
        format!("internal error: {} was handed buffers of another op's shape", op.name),
    )
}

/// Memory a communicator allocated for its ops (`Comm::alloc`): `bytes()` zeroed bytes
/// at `ptr()`, 64-byte aligned, owned until dropped.
pub(crate) trait SharedMem: Send + Sync {
    fn ptr(&self) -> *mut u8;
    fn bytes(&self) -> usize;
    /// Whether the backend's collectives read it in place on peers (the shm backend's
    /// zero-copy paths), rather than treating it as any host buffer.
    fn zero_copy(&self) -> bool;
}

/// [`SharedMem`] from the heap: what a backend without a shared segment hands out.
pub(crate) struct HeapMem {
    ptr: std::ptr::NonNull<u8>,
    bytes: usize,
}

// SAFETY: plain owned memory; `SharedBuf` hands out access by the borrow rules.
unsafe impl Send for HeapMem {}
// SAFETY: as for `Send`.
unsafe impl Sync for HeapMem {}

impl HeapMem {
    const ALIGN: usize = 64;

    pub(crate) fn new(bytes: usize) -> Result<HeapMem> {
        if bytes == 0 {
            #[repr(C, align(64))]
            struct Line([u8; 64]);
            return Ok(HeapMem { ptr: std::ptr::NonNull::<Line>::dangling().cast(), bytes });
        }
        let layout = std::alloc::Layout::from_size_align(bytes, Self::ALIGN).map_err(|_| {
            crate::error::Error::invalid("alloc", format!("{bytes} bytes is more than memory can hold"))
        })?;
        // SAFETY: a non-zero size.
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        match std::ptr::NonNull::new(p) {
            Some(ptr) => Ok(HeapMem { ptr, bytes }),
            None => Err(crate::error::Error::invalid("alloc", format!("out of memory allocating {bytes} bytes"))),
        }
    }
}

impl Drop for HeapMem {
    fn drop(&mut self) {
        if self.bytes > 0 {
            let layout = std::alloc::Layout::from_size_align(self.bytes, Self::ALIGN).expect("checked at new");
            // SAFETY: allocated in `new` with this layout.
            unsafe { std::alloc::dealloc(self.ptr.as_ptr(), layout) }
        }
    }
}

impl SharedMem for HeapMem {
    fn ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }
    fn bytes(&self) -> usize {
        self.bytes
    }
    fn zero_copy(&self) -> bool {
        false
    }
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

    /// Runs `op` after comparing its record across the ranks of communicator `name`
    /// (`DIST_DEBUG=check` on a backend that does not piggyback every op): by default one
    /// all-gather of the records through [`run`](Backend::run), then the op. A backend may
    /// carry the check in the op's own messages where that is one exchange among all
    /// ranks (the MPI backend's small all-reduce: its key, whole records only after a
    /// mismatch), so the check costs nearly nothing there.
    fn run_agreed(&self, name: &str, op: &Op, bufs: Bufs<'_>) -> Result<()> {
        agree::exchange_records(self, name, op)?;
        self.run(op, bufs)
    }

    /// Collective over this communicator (`Comm::alloc`, after the typed layer's checks):
    /// `bytes` zeroed bytes for this rank. By default heap memory; the shm backend maps
    /// it where every peer can read it, and reads it in place in collectives.
    fn alloc(&self, cx: &Op, bytes: usize) -> Result<Box<dyn SharedMem>> {
        let _ = cx;
        Ok(Box::new(HeapMem::new(bytes)?))
    }

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
    /// Whether a posted send has completed, without blocking (then it is gone, as after
    /// `wait_send`); moves what can be moved meanwhile.
    fn test_send(&self, site: Site, id: ReqId) -> Result<bool>;
    /// Whether a posted receive's message is here in full; if so it is copied into `buf`
    /// and the receive is gone, as after `wait_recv`. Never blocks.
    fn test_recv(&self, site: Site, id: ReqId, dtype: DType, buf: &mut [u8]) -> Result<bool>;
    /// Posts a receive from any source with `tag` (MPI's `MPI_ANY_SOURCE`): it takes the
    /// first message with `tag` that no receive posted for its source claims; one
    /// source's messages are taken in the order they were sent.
    fn post_recv_any(&self, site: Site, tag: u32) -> Result<ReqId>;
    /// Waits for a receive from any source: its message (of `dtype`, up to `buf.len()`
    /// bytes) lands in `buf`; returns (source, bytes).
    fn wait_recv_any(&self, site: Site, id: ReqId, dtype: DType, buf: &mut [u8]) -> Result<(usize, usize)>;
    /// `wait_recv_any` without the wait: `Some((source, bytes))` once done (then the
    /// receive is gone). Never blocks.
    fn test_recv_any(&self, site: Site, id: ReqId, dtype: DType, buf: &mut [u8]) -> Result<Option<(usize, usize)>>;

    /// Collective over this communicator: builds a child communicator of the ranks
    /// `members` (in this communicator's numbering, in child-rank order) if this rank is
    /// one of them. `key` names the child uniquely among this communicator's children;
    /// `name` is how errors name it (its group and world ranks, e.g. `Tp{4,5}`).
    fn create_child(&self, cx: &Op, key: &str, name: &str, members: &[usize]) -> Result<Option<Box<dyn Backend>>>;

    /// Marks this rank as finished in this communicator (peers still waiting on it get an error).
    fn finish(&self);
    /// Sets the deadline of this communicator's waits (`Comm::set_timeout`).
    fn set_timeout(&self, t: std::time::Duration);
    /// The deadline of this communicator's waits.
    fn timeout(&self) -> std::time::Duration;

    /// Messages sent to this rank that arrived and that no receive claims, one line per
    /// sender call site (asked as the rank leaves: they will never be received).
    fn unreceived(&self) -> Vec<String> {
        Vec::new()
    }

    /// The ranks of this communicator whose process died or failed (`Comm::failed_ranks`).
    fn failed_ranks(&self) -> Result<Vec<usize>> {
        Err(no_recovery(self.kind(), "failed_ranks"))
    }
    /// Makes every pending and later op on this communicator fail on every rank
    /// (`Comm::revoke`; not collective).
    fn revoke(&self) -> Result<()> {
        Err(no_recovery(self.kind(), "revoke"))
    }
    /// Fault-tolerant consensus among the live ranks (`Comm::agree`): the AND of their
    /// `flag`s and the ranks that took no part (dead), the same on every live rank.
    /// `call` numbers this communicator's agreements and shrinks (the same on every rank).
    fn agree(&self, cx: &Op, flag: bool, call: u64) -> Result<(bool, Vec<usize>)> {
        let _ = (cx, flag, call);
        Err(no_recovery(self.kind(), "agree"))
    }
    /// The communicator of the live ranks (`Comm::shrink`): an agreement on who is
    /// alive, then a new communicator among them alone, in rank order; returns it with the
    /// ranks left out.
    fn shrink(&self, cx: &Op, call: u64, name: &dyn Fn(&[usize]) -> String) -> Result<(Box<dyn Backend>, Vec<usize>)> {
        let _ = (cx, call, name);
        Err(no_recovery(self.kind(), "shrink"))
    }
}

/// The error of a recovery call on a backend that has none.
fn no_recovery(kind: &'static str, op: &str) -> Error {
    Error::backend(
        kind,
        format!(
            "`{op}` (surviving a rank's death) is built on the shm backend only so far; on this backend a dead \
             rank ends the job"
        ),
    )
}
