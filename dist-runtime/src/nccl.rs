//! The NCCL backend (feature `nccl`): collectives and p2p on device buffers through
//! cudarc's `nccl::result` layer (cudarc's bindings, loaded at run time, so this builds
//! on machines without CUDA).
//!
//! A job started with `DIST_BACKEND=nccl` (or `auto` where a GPU is visible) gives every
//! communicator both a host backend (shared memory, for `&[T]` slices and objects) and an
//! NCCL communicator on this rank's GPU, reached through [`Comm::device`](crate::Comm::device):
//!
//! ```ignore
//! let dev = world.device()?;                       // DeviceComm on this rank's GPU
//! let mut grad = dev.stream().clone_htod(&host)?;  // a CudaSlice<f32>
//! dev.all_reduce(&mut grad, ReduceOp::Avg)?.wait()?;
//! ```
//!
//! Ops are enqueued on the communicator's stream in call order and return a
//! [`DeviceRequest`] holding a CUDA event recorded after the op: `wait()` blocks the host,
//! `stream_wait(&s)` makes another stream wait on the GPU (compute/communication
//! overlap). Host slices passed to the ordinary `Comm` methods keep using the host
//! backend: no staging copies through the GPU (docs/design.md, "NCCL").

pub use crate::backend::nccl::{probe, NcclCallError};
pub use crate::comm::device::{DeviceBatch, DeviceComm, DeviceRequest};

/// The cudarc types device code works with, re-exported so one dependency is enough.
pub use cudarc::driver::{
    CudaContext as Context, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DeviceRepr, DriverError,
};
pub use cudarc::nccl::safe::NcclType;
