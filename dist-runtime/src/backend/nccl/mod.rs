//! The NCCL backend (feature `nccl`): communicators on device buffers over cudarc's
//! `result`/`sys` layers (loaded at run time, so this builds without CUDA). The typed
//! face, `Comm::device()`, is `comm/device.rs`; the public names are in `nccl.rs`.

mod comm;
mod error;
mod probe;

pub(crate) use comm::NcclComm;
pub use error::NcclCallError;
pub(crate) use error::{fail, ok};
pub use probe::probe;

/// A device address, as cudarc's driver layer gives it.
pub(crate) type DevPtr = cudarc::driver::sys::CUdeviceptr;
