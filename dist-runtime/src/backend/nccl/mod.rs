//! The NCCL backend (feature `nccl`): the [`Device`](crate::backend::Device) of a
//! communicator on GPUs, over cudarc's `result`/`sys` layers (loaded at run time, so this
//! builds without CUDA): `comm.rs` is the RAII communicator, `ops.rs` the ops, `types.rs`
//! the element types, `probe.rs` whether NCCL can run here, `error.rs` its errors. The
//! typed layer reaches it through `comm/device.rs`; the public names are in `nccl.rs`.

mod comm;
mod error;
mod ops;
mod probe;
mod types;

pub(crate) use comm::NcclComm;
pub use error::NcclCallError;
pub(crate) use error::{fail, ok};
pub(crate) use ops::{CudaRead, CudaWrite};
pub use probe::probe;
pub(crate) use probe::{env_defaults, native_collectives};

/// A device address, as cudarc's driver layer gives it.
pub(crate) type CuPtr = cudarc::driver::sys::CUdeviceptr;
