//! # dist-runtime
//!
//! An MPI-style SPMD framework: one function, written once, runs as N ranks (processes)
//! that talk through typed communicators.
//!
//! ```no_run
//! use dist_runtime::prelude::*;
//!
//! const ACT: Tag<f32> = Tag::new(1);
//!
//! #[spmd]
//! fn main(world: Comm<World>) -> dist_runtime::Result<()> {
//!     let mut grad = vec![world.rank() as f32; 1024];
//!     world.all_reduce(&mut grad, ReduceOp::Sum)?;
//!     match world.rank() {
//!         0 if world.size() > 1 => world.send(1, ACT, &grad)?,
//!         1 => world.recv(0, ACT, &mut grad)?,
//!         _ => {}
//!     }
//!     Ok(())
//! }
//! ```
//!
//! Run it with `cargo xtask run -n 8 --example NAME` (the shared-memory backend on CPU
//! cores by default), test it with `#[dist_runtime::test(ranks = [1, 2, 4])]`.
#![deny(missing_docs)]

mod backend;
mod comm;
mod config;
mod dtype;
mod entry;
mod error;
mod group;
mod init;
pub mod launch;
#[cfg(feature = "nccl")]
pub mod nccl;
mod op;
pub mod placement;
pub mod store;
mod tag;
pub mod testing;

pub use comm::{wait_all, Batch, Comm, Request};
pub use config::{BackendChoice, DebugLevel, Env, MAX_WORLD};
pub use dist_macros::{spmd, test};
pub use dtype::{DType, Element};
pub use entry::entries;
pub use entry::EntryReturn;
pub use error::{Error, Result, Site};
pub use group::{Group, World};
pub use init::{init, init_with};
pub use launch::{launch, launch_by_name, Launch, Report};
#[cfg(feature = "nccl")]
pub use nccl::{DeviceBatch, DeviceComm, DeviceRequest, NcclType};
pub use op::ReduceOp;
pub use tag::Tag;

/// Re-exported so users name `f16`/`bf16` without a direct dependency on `half`.
pub use half::{bf16, f16};

/// The names most programs need: `use dist_runtime::prelude::*;`.
pub mod prelude {
    pub use crate::{group, spmd, Comm, Element, Group, ReduceOp, Request, Tag, World};
}

/// Items the macros' expansions name by absolute path. Not a public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::entry::{dispatch, finish_entry, run_rank, Entry, Failure};
    pub use crate::testing::run_test;
    pub use crate::EntryReturn;
    pub use ctor;
    pub use inventory;
}
