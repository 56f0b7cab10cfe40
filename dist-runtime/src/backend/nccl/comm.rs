//! `NcclComm`: one NCCL communicator and its stream, over cudarc's `result` layer, with
//! RAII teardown (finalize then destroy; abort when unwinding, when finalize fails, or
//! after a timed-out wait left a kernel that will never finish).
//!
//! Every communicator is NCCL's non-blocking kind (`ncclConfig_t::blocking = 0`): a call
//! that must wait for peers (creation, a split, the first send or receive to a peer, which
//! NCCL connects lazily inside `ncclGroupEnd`) returns `ncclInProgress` at once, and dist
//! polls `ncclCommGetAsyncError` until it is done or the communicator's deadline passes.
//! A blocking communicator would wait inside NCCL with no bound: a first device send to a
//! peer that never posts its receive hung there forever.

use super::{fail, ok, CuPtr};
use crate::dtype::DType;
use crate::error::{Error, Result};
use cudarc::driver::{CudaContext, CudaStream};
use cudarc::nccl::{result, sys};
use std::ffi::c_void;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One NCCL communicator and the stream its ops go on.
pub(crate) struct NcclComm {
    pub(crate) comm: sys::ncclComm_t,
    pub(crate) stream: Arc<CudaStream>,
    pub(crate) size: usize,
    /// This rank in the communicator.
    pub(crate) rank: usize,
    /// NCCL requires one caller at a time per communicator.
    pub(crate) lock: Mutex<()>,
    /// Set when a wait on one of its ops timed out, or NCCL reported an error: the
    /// communicator holds work that will never finish (or is in an unknown state), so it
    /// is aborted (not finalized) and refuses new ops.
    pub(crate) broken: Arc<std::sync::atomic::AtomicBool>,
    /// Set once `ncclCommAbort` has been called on it (at a timeout in the background,
    /// under `lock`): nothing may call NCCL on `comm` again, the drop included.
    pub(crate) aborted: std::sync::atomic::AtomicBool,
    /// How long a call may wait for NCCL to finish in the background (`DIST_TIMEOUT`).
    pub(crate) timeout: Duration,
    /// Gather, scatter and all-to-all of one block size go through NCCL's own calls
    /// (every rank's library has them and `DIST_NCCL_NATIVE` is not 0: agreed at the
    /// world's creation, inherited by splits); grouped sends and receives otherwise.
    pub(crate) native: bool,
}

// SAFETY: an ncclComm_t may be used from any thread as long as calls on it are not
// concurrent, which `lock` guarantees; the stream is cudarc's thread-safe handle.
unsafe impl Send for NcclComm {}
// SAFETY: as above.
unsafe impl Sync for NcclComm {}

impl Drop for NcclComm {
    fn drop(&mut self) {
        // Collective teardown in a fixed order: finalize (flushes pending ops), destroy.
        // Abort only when unwinding or when finalizing failed.
        // SAFETY: `comm` was created by ncclCommInitRank/Split and is dropped once.
        unsafe {
            if self.aborted.load(std::sync::atomic::Ordering::SeqCst) {
                return;
            }
            let broken = self.broken.load(std::sync::atomic::Ordering::SeqCst);
            // Finalizing a non-blocking communicator goes on in the background: it is
            // destroyed once that is done, aborted if it fails or outlasts the deadline.
            let finalized = !broken
                && !std::thread::panicking()
                && result::comm_finalize(self.comm).is_ok()
                && matches!(ready(self.comm, Instant::now() + self.timeout, "ncclCommFinalize"), Ok(true));
            if finalized {
                let _ = result::comm_destroy(self.comm);
            } else {
                let _ = result::comm_abort(self.comm);
            }
        }
    }
}

/// `NCCL_CONFIG_UNDEF_INT`: "NCCL's default" for an integer field of `ncclConfig_t`.
const UNDEF: std::ffi::c_int = i32::MIN;

/// The NCCL version of the header cudarc's bindings were made from (2.30.0 to 2.30.4:
/// their `ncclConfig_t` ends at `maxP2pPeers`, which 2.30.0 added, before 2.30.5's
/// `graphStreamOrdering`). `NCCL_CONFIG_INITIALIZER` puts the header's version in
/// `version`, and NCCL resets to its defaults the fields a caller of that version could
/// not know: the loaded library's version there would let a newer NCCL read fields past
/// the bindings' struct.
const BINDINGS_NCCL_VERSION: std::ffi::c_uint = 23000;

// The struct of NCCL 2.30.0–2.30.4 (92 bytes of fields, padded to 96): a cudarc upgrade
// that changes it must revisit `BINDINGS_NCCL_VERSION` and the fields below.
const _: () = assert!(std::mem::size_of::<sys::ncclConfig_t>() == 96);

/// `NCCL_CONFIG_INITIALIZER` with `blocking = 0`: every other field NCCL's default. NCCL
/// reads `min(size, its own size)` bytes, so a library older than the bindings takes the
/// fields it knows; a newer one takes the bindings' and, by `version`, defaults the rest.
fn nonblocking_config() -> sys::ncclConfig_t {
    let null = std::ptr::null();
    // Zeroed first, so the padding NCCL copies is defined.
    // SAFETY: every field is an integer or a raw pointer, for which zero is valid.
    let mut c: sys::ncclConfig_t = unsafe { std::mem::MaybeUninit::zeroed().assume_init() };
    c.size = std::mem::size_of::<sys::ncclConfig_t>();
    c.magic = 0xcafe_beef;
    c.version = BINDINGS_NCCL_VERSION;
    c.blocking = 0;
    c.cgaClusterSize = UNDEF;
    c.minCTAs = UNDEF;
    c.maxCTAs = UNDEF;
    c.netName = null;
    c.splitShare = UNDEF;
    c.trafficClass = UNDEF;
    c.commName = null;
    c.collnetEnable = UNDEF;
    c.CTAPolicy = UNDEF;
    c.shrinkShare = UNDEF;
    c.nvlsCTAs = UNDEF;
    c.nChannelsPerNetPeer = UNDEF;
    c.nvlinkCentricSched = UNDEF;
    c.graphUsageMode = UNDEF;
    c.numRmaCtx = UNDEF;
    c.maxP2pPeers = UNDEF;
    c
}

/// Waits until a non-blocking communicator has carried out the calls made on it (its
/// state leaves `ncclInProgress`): `Ok(true)` once it has, `Ok(false)` if `until` passed
/// first, the error if NCCL reports one (`what` names the call).
pub(crate) fn ready(comm: sys::ncclComm_t, until: Instant, what: &str) -> Result<bool> {
    // Spin for the first 50 µs (an op's launch on NCCL's thread), then nap: a 2 µs sleep
    // is tens of µs in practice (timer slack), too long for a short op.
    let start = Instant::now();
    let mut nap = Duration::from_micros(20);
    loop {
        let mut state = sys::ncclResult_t::ncclSuccess;
        // SAFETY: `comm` is a live communicator; `state` is written by NCCL.
        unsafe { sys::ncclCommGetAsyncError(comm, &mut state) }
            .result()
            .map_err(|e| fail("ncclCommGetAsyncError", e))?;
        match state {
            sys::ncclResult_t::ncclSuccess => return Ok(true),
            sys::ncclResult_t::ncclInProgress => {}
            e => return Err(fail(what, result::NcclError(e))),
        }
        let now = Instant::now();
        if now >= until {
            return Ok(false);
        }
        if now - start < Duration::from_micros(50) {
            std::hint::spin_loop();
        } else {
            std::thread::sleep(nap);
            nap = (nap * 2).min(Duration::from_millis(1));
        }
    }
}

/// [`ready`] for a communicator nothing else holds yet (one just created or split off):
/// past `until` or on NCCL's error it is aborted, and the error is NCCL's, or `late`.
fn ready_or_abort(comm: sys::ncclComm_t, until: Instant, what: &str, late: impl FnOnce() -> Error) -> Result<()> {
    let done = ready(comm, until, what);
    if matches!(done, Ok(true)) {
        return Ok(());
    }
    // SAFETY: `comm` is live and ours alone, and not used again.
    unsafe {
        let _ = result::comm_abort(comm);
    }
    done?;
    Err(late())
}

impl NcclComm {
    pub(crate) fn cu(&self) -> sys::cudaStream_t {
        self.stream.cu_stream() as _
    }

    /// `ncclSend` of `n` elements at `p` to `peer`, on this communicator's stream.
    ///
    /// # Safety
    /// `p` is a device buffer of at least `n` elements of `dt` on this comm's device.
    pub(crate) unsafe fn post_send(&self, p: CuPtr, n: usize, dt: DType, peer: usize) -> Result<()> {
        let t = super::types::nccl_type(dt);
        // SAFETY: forwarded.
        ok(unsafe { result::send(p as *const c_void, n, t, peer as i32, self.comm, self.cu()) }, "ncclSend")
    }

    /// `ncclRecv` of `n` elements into `p` from `peer`.
    ///
    /// # Safety
    /// As [`post_send`](Self::post_send), for writing.
    pub(crate) unsafe fn post_recv(&self, p: CuPtr, n: usize, dt: DType, peer: usize) -> Result<()> {
        let t = super::types::nccl_type(dt);
        // SAFETY: forwarded.
        ok(unsafe { result::recv(p as *mut c_void, n, t, peer as i32, self.comm, self.cu()) }, "ncclRecv")
    }

    /// Runs `f` as one NCCL group; the group is closed even when `f` fails.
    pub(crate) fn group(f: impl FnOnce() -> Result<()>) -> Result<()> {
        ok(result::group_start(), "ncclGroupStart")?;
        let r = f();
        ok(result::group_end(), "ncclGroupEnd")?;
        r
    }

    /// Creates the world communicator on `device`: rank 0 makes the unique id and `share`
    /// hands it to every rank (a broadcast from rank 0 over the world's host side, on
    /// whatever backend that is: shared memory, or MPI across hosts).
    pub(crate) fn world(
        device: usize,
        rank: usize,
        size: usize,
        share: &dyn Fn(&mut [u8; 128]) -> Result<()>,
        timeout: Duration,
        native: bool,
    ) -> Result<NcclComm> {
        let ctx = CudaContext::new(device).map_err(|e| fail(&format!("opening device {device}"), e))?;
        let stream = ctx.new_stream().map_err(|e| fail("creating a stream", e))?;
        let mut bytes = [0u8; 128];
        if rank == 0 {
            let id = result::get_uniqueid().map_err(|e| fail("ncclGetUniqueId", e))?;
            for (b, c) in bytes.iter_mut().zip(id.internal.iter()) {
                *b = *c as u8;
            }
        }
        share(&mut bytes)?;
        let mut internal = [0 as std::ffi::c_char; 128];
        for (d, b) in internal.iter_mut().zip(&bytes) {
            *d = *b as std::ffi::c_char;
        }
        let id = sys::ncclUniqueId { internal };
        let mut config = nonblocking_config();
        let mut comm: sys::ncclComm_t = std::ptr::null_mut();
        // SAFETY: `comm` is written by NCCL before it returns (the creation itself goes on
        // in the background); the context is current on this thread (CudaContext::new
        // binds it); `config` is read during the call.
        unsafe {
            ctx.bind_to_thread().map_err(|e| fail("binding the CUDA context", e))?;
            result::comm_init_rank_config(&mut comm, size as i32, id, rank as i32, &mut config)
                .map_err(|e| fail("ncclCommInitRankConfig", e))?;
        }
        ready_or_abort(comm, Instant::now() + timeout, "ncclCommInitRankConfig", || {
            Error::backend(
                "nccl",
                format!(
                    "creating the NCCL communicator of {size} ranks did not finish within DIST_TIMEOUT ({:.0} s): \
                     a rank never joined, or NCCL could not connect them (NCCL_DEBUG=WARN says why)",
                    timeout.as_secs_f64()
                ),
            )
        })?;
        Ok(NcclComm::new(comm, stream, size, rank, timeout, native))
    }

    /// `ncclCommSplit`: collective over this communicator. Ranks passing `Some(color)`
    /// form one communicator per color, ordered by `key`; `None` takes no part.
    pub(crate) fn split(&self, color: Option<u32>, key: usize) -> Result<Option<NcclComm>> {
        let _g = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        if self.broken.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(Error::backend(
                "nccl",
                "splitting a communicator whose device side was aborted (an earlier device op timed out or failed)",
            ));
        }
        // NCCL writes the new communicator when the split has finished, in the
        // background: into memory that outlives a split NCCL may still be running.
        let new: *mut sys::ncclComm_t = Box::into_raw(Box::new(std::ptr::null_mut()));
        let c = color.map_or(-1, |c| c as i32); // NCCL_SPLIT_NOCOLOR
        let until = Instant::now() + self.timeout;
        // SAFETY: valid parent comm; `new` stays valid until the split is over (leaked
        // otherwise); a null config makes the child inherit the parent's (non-blocking).
        let called = unsafe { sys::ncclCommSplit(self.comm, c, key as i32, new, std::ptr::null_mut()).result() };
        if let Err(e) = called {
            // Refused at the call: `new` is left to NCCL (8 bytes), whose failure paths
            // may still write it.
            self.abort_now();
            return Err(fail("ncclCommSplit", e));
        }
        let done = ready(self.comm, until, "ncclCommSplit");
        if !matches!(done, Ok(true)) {
            // Still running, or failed: aborting the parent joins the split's job, after
            // which NCCL has written whatever it writes into `new` (a failed child too).
            self.abort_now();
            // SAFETY: the split's job is over (joined by the abort): `new` is ours again.
            let child = *unsafe { Box::from_raw(new) };
            if !child.is_null() {
                // SAFETY: a communicator NCCL made and nobody else holds.
                unsafe {
                    let _ = result::comm_abort(child);
                }
            }
            done?;
            return Err(Error::backend(
                "nccl",
                format!(
                    "splitting the NCCL communicator did not finish within DIST_TIMEOUT ({:.0} s): a member \
                     never made the matching split; the communicator's device side is aborted",
                    self.timeout.as_secs_f64()
                ),
            ));
        }
        // SAFETY: the split is over: `new` is ours again.
        let new = *unsafe { Box::from_raw(new) };
        if new.is_null() {
            return Ok(None);
        }
        ready_or_abort(new, until, "ncclCommSplit", || {
            Error::backend("nccl", "the communicator split off did not become ready within DIST_TIMEOUT")
        })?;
        // SAFETY: `new` is a valid communicator just created.
        let size = unsafe { result::comm_count(new).map_err(|e| fail("ncclCommCount", e))? as usize };
        // SAFETY: as above.
        let rank = unsafe { result::comm_user_rank(new).map_err(|e| fail("ncclCommUserRank", e))? as usize };
        let stream = self.stream.context().new_stream().map_err(|e| fail("creating a stream", e))?;
        Ok(Some(NcclComm::new(new, stream, size, rank, self.timeout, self.native)))
    }

    /// The handle of a ready communicator: not broken, not aborted.
    fn new(
        comm: sys::ncclComm_t,
        stream: Arc<CudaStream>,
        size: usize,
        rank: usize,
        timeout: Duration,
        native: bool,
    ) -> NcclComm {
        NcclComm {
            comm,
            stream,
            size,
            rank,
            lock: Mutex::new(()),
            broken: Default::default(),
            aborted: Default::default(),
            timeout,
            native,
        }
    }

    /// Aborts the communicator now (the caller holds `lock`): NCCL stops what runs in its
    /// background (a connection to a peer that never came) and joins it, so nothing is
    /// enqueued on the stream after this returns; the communicator refuses every op
    /// after, and its drop leaves it alone.
    pub(crate) fn abort_now(&self) {
        self.broken.store(true, std::sync::atomic::Ordering::SeqCst);
        if !self.aborted.swap(true, std::sync::atomic::Ordering::SeqCst) {
            // SAFETY: `comm` is live, not aborted before (the swap), and the caller holds
            // the lock, so no other call on it runs.
            unsafe {
                let _ = result::comm_abort(self.comm);
            }
        }
    }
}
