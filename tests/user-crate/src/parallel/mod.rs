//! How the trainer splits its ranks: pipeline stages × data-parallel replicas, kept in
//! one struct, with the exchange helpers in their own files (`pipeline.rs`, `grads.rs`).
//! The binary's `pipeline_train` entry uses them under `#[spmd(strict)]`: the
//! compile-time check follows the struct, its methods and both module files.

use dist_runtime::prelude::*;

pub mod grads;
pub mod pipeline;

dist_runtime::group!(pub Dp);
dist_runtime::group!(pub Pp);

/// The communicators of one rank: its pipeline (`pp`, ranks of one replica in stage
/// order) and its data-parallel group (`dp`, the ranks of one stage).
pub struct ParallelState {
    pub dp: Comm<Dp>,
    pub pp: Comm<Pp>,
}

impl ParallelState {
    /// Two stages when the world is even, else one: `mesh2` lays ranks out as
    /// `rank = replica * stages + stage`.
    pub fn new(world: &Comm<World>) -> dist_runtime::Result<ParallelState> {
        let n = world.size();
        let stages = if n.is_multiple_of(2) { 2 } else { 1 };
        let (dp, pp) = world.mesh2::<Dp, Pp>(n / stages, stages)?;
        Ok(ParallelState { dp, pp })
    }

    /// This rank's pipeline stage.
    pub fn stage(&self) -> usize {
        self.pp.rank()
    }

    /// Whether this rank runs the last stage.
    pub fn last_stage(&self) -> bool {
        self.pp.rank() + 1 == self.pp.size()
    }
}
