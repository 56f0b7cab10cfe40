//! `dist_runtime::nccl`: the public face of GPUs under NCCL (feature `nccl`): how a
//! user's job gets device communicators, what they accept, and the few names the NCCL
//! side exports (`probe`, `NcclCallError`, `has_native_collectives`, cudarc's device
//! types). The backend itself, the device side of every communicator through cudarc's
//! `nccl::result` layer (loaded at run time, so this builds on machines without CUDA),
//! is `backend/nccl/`.
//!
//! A job started with `DIST_BACKEND=nccl` (or `auto` where a GPU is visible) gives every
//! communicator both a host backend (shared memory, for host buffers and objects) and an
//! NCCL communicator on this rank's GPU. The ops are the same `Comm` methods: they take
//! cudarc's `CudaSlice<T>` (and views) as well as host slices, with the same argument
//! checks, the same cross-rank comparison under `DIST_DEBUG=check`, and a deadline:
//!
//! ```ignore
//! let stream = world.stream()?;                        // this rank's GPU, in op order
//! let mut grad = stream.clone_htod(&host)?;            // a CudaSlice<f32>
//! world.all_reduce(&mut grad, ReduceOp::Avg)?;         // returns once done on the GPU
//! let req = world.all_reduce_async(&mut grad, ReduceOp::Sum)?;
//! req.stream_wait(&compute)?;                          // overlap: the GPU waits, not the host
//! ```
//!
//! Blocking forms return once the op has completed on the GPU (a host wait bounded by
//! `DIST_TIMEOUT`, which turns a hung kernel into `Error::Timeout` and aborts the
//! communicator); `_async` forms, `isend` and `irecv` return a [`Request`](crate::Request)
//! whose `wait()` does the same and whose `stream_wait(&s)` makes another stream wait on
//! the GPU. Host buffers keep using the host backend: no staging copies through the GPU
//! (docs/design.md, "NCCL"). Device point-to-point has no tags: messages between two
//! ranks match in posting order, as in NCCL.

pub use crate::backend::nccl::{probe, NcclCallError};

/// Whether the loaded NCCL has its own all-to-all, gather and scatter (2.28 and newer).
/// dist calls them for those ops when every rank's NCCL has them and the blocks are one
/// size (the even forms; a `gather_v`/`scatter_v` of one size), and grouped sends and
/// receives otherwise or with `DIST_NCCL_NATIVE=0`. False where NCCL cannot run here.
pub fn has_native_collectives() -> bool {
    probe().is_ok() && crate::backend::nccl::native_collectives()
}

/// The cudarc types device code works with, re-exported so one dependency is enough.
pub use cudarc::driver::{
    CudaContext as Context, CudaSlice, CudaStream, CudaView, CudaViewMut, DevicePtr, DevicePtrMut, DeviceRepr,
    DriverError,
};
