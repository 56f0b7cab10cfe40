//! Empty-cluster repair: the point farthest from its centroid, over every rank, becomes
//! the empty cluster's centroid. Its owner is found with a max-loc all_reduce over
//! (distance, rank) and broadcasts the point.

use dist_runtime::prelude::*;

/// (distance, rank) pairs: the larger distance wins, the lower rank on ties.
fn maxloc_fold(acc: &mut [f64], x: &[f64]) {
    for (a, b) in acc.chunks_exact_mut(2).zip(x.chunks_exact(2)) {
        if b[0] > a[0] || (b[0] == a[0] && b[1] < a[1]) {
            a.copy_from_slice(b);
        }
    }
}

fn maxloc() -> ReduceOp {
    ReduceOp::user_items("maxloc", 2, maxloc_fold)
}

/// Finds the farthest point over all ranks and returns a copy on every rank, with the
/// rank that owns it. `local_far` is this rank's farthest (index, distance), if any.
pub fn farthest_point<G: Group>(
    comm: &Comm<G>,
    local_far: Option<(usize, f64)>,
    local_points: &[Vec<f64>],
    dim: usize,
) -> dist_runtime::Result<(usize, Vec<f64>)> {
    let mut pair = match local_far {
        Some((_, d)) => [d, comm.rank() as f64],
        None => [f64::NEG_INFINITY, comm.rank() as f64],
    };
    comm.all_reduce(&mut pair, maxloc())?;
    let owner = pair[1] as usize;
    let mut p = vec![0.0; dim];
    if comm.rank() == owner {
        let (i, _) = local_far.expect("the owner has a point");
        p.copy_from_slice(&local_points[i]);
    }
    comm.broadcast(&mut p, owner)?;
    Ok((owner, p))
}
