//! The sparse all-gather: lengths first, then indices and values with `all_gather_v`.

use crate::compress::Sparse;
use dist_runtime::prelude::*;

/// Every rank's (indices, values), concatenated in rank order.
pub fn all_gather_sparse(world: &Comm<World>, mine: &Sparse) -> dist_runtime::Result<Sparse> {
    let n = world.size();
    let mut lens = vec![0u64; n];
    world.all_gather(&[mine.idx.len() as u64], &mut lens)?;
    let counts: Vec<usize> = lens.iter().map(|&l| l as usize).collect();
    let total: usize = counts.iter().sum();
    let mut all = Sparse { idx: vec![0u32; total], val: vec![0.0f32; total] };
    world.all_gather_v(&mine.idx, &mut all.idx, &counts)?;
    world.all_gather_v(&mine.val, &mut all.val, &counts)?;
    Ok(all)
}

/// The mean loss over all ranks (every rank gets it).
pub fn mean_loss(world: &Comm<World>, local: f32) -> dist_runtime::Result<f32> {
    let mut l = [local];
    world.all_reduce(&mut l, ReduceOp::Sum)?;
    Ok(l[0] / world.size() as f32)
}
