//! Gradient averaging over the data-parallel group, bucket by bucket: every bucket's
//! all-reduce is started, the requests kept in a `Vec`, then all are waited together.

use super::ParallelState;
use dist_runtime::prelude::*;

/// Averages each bucket of `buckets` over the replicas of this rank's stage.
pub fn average(ps: &ParallelState, buckets: &mut [Vec<f32>]) -> dist_runtime::Result<()> {
    let mut reqs = Vec::new();
    for b in buckets.iter_mut() {
        reqs.push(ps.dp.all_reduce_async(b, ReduceOp::Avg)?);
    }
    dist_runtime::wait_all(reqs)
}
