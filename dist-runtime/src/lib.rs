//! # dist-runtime
//!
//! An MPI-style SPMD framework: one function, written once, runs as N ranks (processes)
//! that talk through typed communicators.
//!
//! ```
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
//! ## Running it from your crate
//!
//! - **`cargo spmd run -n 8`**: the launcher, installed once with
//!   `cargo install --path cargo-spmd` from a checkout of dist. It builds the package's
//!   binary (or `--bin`/`--example`), starts 8 ranks on the shared-memory backend,
//!   prefixes their output with `[rank k]` and stops every rank at the first failure.
//!   `--entry NAME` runs another `#[spmd]` function of the binary, `--list` lists them,
//!   `--backend nccl` runs on GPUs. (`cargo xtask run` is the same, inside dist's
//!   own workspace only.)
//! - **`cargo test`**: `#[dist_runtime::test(ranks = [1, 2, 4])]` tests, in any module
//!   or file, run as real rank processes.
//! - **From code**: [`launch(n, f)`](launch()) runs an `#[spmd] fn f` on n ranks and
//!   returns each rank's value (the `mp.spawn` of dist); [`Launch`] is the builder
//!   behind it.
//! - **Under torchrun, Slurm or by hand**: `RANK`, `WORLD_SIZE`, `MASTER_ADDR`,
//!   `MASTER_PORT` (see [`Env`]); with none of them set a program is a world of one,
//!   as the example above is when it runs as a doctest.
//!
//! Add to your Cargo.toml, or collectives run ~25x slower in debug builds and tests:
//!
//! ```toml
//! [profile.dev.package.dist-runtime]
//! opt-level = 2
//! [profile.dev.package.dist-macros]
//! opt-level = 3
//! ```
//!
//! Ranks in a `Comm<G>` are the communicator's own (`0..size()`), as in MPI; torch's
//! `src=`/`dst=` are world ranks: translate with [`Comm::group_rank_of`] and
//! [`Comm::world_rank_of`].
#![deny(missing_docs)]

mod backend;
mod buffer;
#[cfg(feature = "candle")]
pub mod candle;
pub mod checkpoint;
mod comm;
mod dtype;
mod entry;
mod env;
mod error;
mod group;
mod init;
pub mod launch;
#[cfg(feature = "nccl")]
pub mod nccl;
mod op;
pub mod placement;
mod reduce_op;
pub mod store;
mod sys;
mod tag;
pub mod testing;
mod verify;

pub use buffer::{Buf, BufMut, SharedBuf};
#[doc(hidden)]
pub use comm::MeshPart;
pub use comm::{wait_all, wait_any, wait_some, Batch, Comm, MeshGroups, RecvAny, Request, Status};
pub use dist_macros::{spmd, test};
pub use dtype::{DType, Element};
pub use entry::EntryReturn;
pub use entry::{entries, ENTRIES_MARKER};
pub use env::{Agreement, BackendChoice, DebugLevel, Env, Tuning, MAX_WORLD};
pub use error::{Error, Result, Site};
pub use group::{Group, World};
pub use init::{backend_available, init, init_with, is_available, is_initialized};
pub use launch::{launch, launch_by_name, Launch, Nodes, Report};
pub use reduce_op::{ReduceOp, UserReduce};
pub use tag::Tag;

/// The flight recorders of a failed job's ranks, lined up per communicator: where each
/// rank last was, ranks grouped where they agree ("World: rank 0 was last at #13
/// all_reduce (src/main.rs:20, not completed); ranks 1–7 were last at #13 broadcast
/// (src/main.rs:24, not completed)"). `dumps` are (world rank, the rank's record): the
/// `flight-<rank>.tsv` files a failing rank writes under `DIST_TRACE=DIR`, one op per
/// line (`comm \t #n \t op \t file:line \t completed|not completed`). The launchers
/// print this in their report; `cargo spmd trace DIR` prints it from the files.
pub fn line_up_flight_records(dumps: &[(usize, String)]) -> String {
    verify::recorder::line_up(dumps)
}

/// Re-exported so users name `f16`/`bf16` without a direct dependency on `half`.
pub use half::{bf16, f16};
/// Re-exported so users name complex elements without a direct dependency on `num-complex`.
pub use num_complex::Complex;

/// The porting guide from torch.distributed (`docs/porting-from-torch.md`): every call
/// and its dist call; its examples run as doctests.
#[doc = include_str!("../../docs/porting-from-torch.md")]
pub mod porting_from_torch {}

/// The names most programs need: `use dist_runtime::prelude::*;`.
pub mod prelude {
    pub use crate::{group, spmd, Comm, Element, Group, ReduceOp, Request, Tag, World};
}

/// The README's code blocks, compiled and run as doctests so the front page never lies.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;

/// serde, which the object collectives (`broadcast_object`, `send_object`, …) take values
/// of: `#[derive(serde::Serialize, serde::Deserialize)]` in your crate, or name this one
/// (`#[serde(crate = "dist_runtime::serde")]`) to use the same version.
pub use serde;

/// Items the macros' expansions name by absolute path. Not a public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::entry::{dispatch, finish_entry, run_rank, test_comm, Entry, Failure, ENTRIES};
    pub use crate::testing::run_test;
    pub use crate::EntryReturn;
    pub use ctor;
    pub use linkme;
}
