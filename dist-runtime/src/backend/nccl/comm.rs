//! `NcclComm`: one NCCL communicator and its stream, over cudarc's `result` layer, with
//! RAII teardown (finalize then destroy; abort when unwinding, when finalize fails, or
//! after a timed-out wait left a kernel that will never finish).

use super::{fail, ok, DevPtr};
use crate::dtype::DType;
use crate::error::Result;
use cudarc::driver::{CudaContext, CudaStream};
use cudarc::nccl::{result, sys};
use std::ffi::c_void;
use std::sync::{Arc, Mutex};

/// One NCCL communicator and the stream its ops go on.
pub(crate) struct NcclComm {
    pub(crate) comm: sys::ncclComm_t,
    pub(crate) stream: Arc<CudaStream>,
    pub(crate) size: usize,
    /// This rank in the communicator.
    pub(crate) rank: usize,
    /// NCCL requires one caller at a time per communicator.
    pub(crate) lock: Mutex<()>,
    /// Set when a wait on one of its ops timed out: the communicator holds a kernel that
    /// will never finish, so it is aborted (not finalized) on drop and refuses new ops.
    pub(crate) broken: Arc<std::sync::atomic::AtomicBool>,
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
            let broken = self.broken.load(std::sync::atomic::Ordering::SeqCst);
            if broken || std::thread::panicking() || result::comm_finalize(self.comm).is_err() {
                let _ = result::comm_abort(self.comm);
            } else {
                let _ = result::comm_destroy(self.comm);
            }
        }
    }
}

impl NcclComm {
    pub(crate) fn cu(&self) -> sys::cudaStream_t {
        self.stream.cu_stream() as _
    }

    /// `ncclSend` of `n` elements at `p` to `peer`, on this communicator's stream.
    ///
    /// # Safety
    /// `p` is a device buffer of at least `n` elements of `dt` on this comm's device.
    pub(crate) unsafe fn post_send(&self, p: DevPtr, n: usize, dt: DType, peer: usize) -> Result<()> {
        let t = super::ops::nccl_type(dt);
        // SAFETY: forwarded.
        ok(unsafe { result::send(p as *const c_void, n, t, peer as i32, self.comm, self.cu()) }, "ncclSend")
    }

    /// `ncclRecv` of `n` elements into `p` from `peer`.
    ///
    /// # Safety
    /// As [`post_send`](Self::post_send), for writing.
    pub(crate) unsafe fn post_recv(&self, p: DevPtr, n: usize, dt: DType, peer: usize) -> Result<()> {
        let t = super::ops::nccl_type(dt);
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
        let mut comm = std::mem::MaybeUninit::uninit();
        // SAFETY: `comm` is written by NCCL on success; the context is current on this
        // thread (CudaContext::new binds it).
        let comm = unsafe {
            ctx.bind_to_thread().map_err(|e| fail("binding the CUDA context", e))?;
            result::comm_init_rank(comm.as_mut_ptr(), size as i32, id, rank as i32)
                .map_err(|e| fail("ncclCommInitRank", e))?;
            comm.assume_init()
        };
        Ok(NcclComm { comm, stream, size, rank, lock: Mutex::new(()), broken: Default::default() })
    }

    /// `ncclCommSplit`: collective over this communicator. Ranks passing `Some(color)`
    /// form one communicator per color, ordered by `key`; `None` takes no part.
    pub(crate) fn split(&self, color: Option<u32>, key: usize) -> Result<Option<NcclComm>> {
        let _g = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let mut new: sys::ncclComm_t = std::ptr::null_mut();
        let c = color.map_or(-1, |c| c as i32); // NCCL_SPLIT_NOCOLOR
                                                // SAFETY: valid parent comm; `new` is written by NCCL (null for no color).
        unsafe {
            sys::ncclCommSplit(self.comm, c, key as i32, &mut new, std::ptr::null_mut())
                .result()
                .map_err(|e| fail("ncclCommSplit", e))?;
        }
        if new.is_null() {
            return Ok(None);
        }
        // SAFETY: `new` is a valid communicator just created.
        let size = unsafe { result::comm_count(new).map_err(|e| fail("ncclCommCount", e))? as usize };
        // SAFETY: as above.
        let rank = unsafe { result::comm_user_rank(new).map_err(|e| fail("ncclCommUserRank", e))? as usize };
        let stream = self.stream.context().new_stream().map_err(|e| fail("creating a stream", e))?;
        Ok(Some(NcclComm { comm: new, stream, size, rank, lock: Mutex::new(()), broken: Default::default() }))
    }
}
