//! The pipeline's forward pass: each stage receives its micro-batch's activations from
//! the stage before and passes its own to the stage after.

use super::ParallelState;
use dist_runtime::prelude::*;

pub const ACT: Tag<f32> = Tag::new(21);

/// One micro-batch through this rank's stage: `act` comes in from the previous stage
/// (stage 0 starts from its input) and leaves, transformed, to the next.
pub fn forward(ps: &ParallelState, act: &mut [f32]) -> dist_runtime::Result<()> {
    let s = ps.stage();
    if s > 0 {
        ps.pp.recv(s - 1, ACT, act)?;
    }
    for a in act.iter_mut() {
        *a = *a * 2.0 + 1.0;
    }
    if !ps.last_stage() {
        ps.pp.send(s + 1, ACT, act)?;
    }
    Ok(())
}
