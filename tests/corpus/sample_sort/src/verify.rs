//! Checks of the distributed result: every rank's keys must not start below the
//! largest key of the ranks before it, and the concatenation in rank order must equal
//! the serially sorted input.

use dist_runtime::prelude::*;

/// The running maximum passed down the chain of ranks.
const EDGE: Tag<u64> = Tag::new(7);

/// Whether this rank's smallest key is at least every key on the ranks before it.
/// The running maximum travels 0 → 1 → … → n-1, one hop at a time.
pub fn edge_ok(comm: &Comm<World>, keys: &[u64]) -> dist_runtime::Result<bool> {
    let (r, n) = (comm.rank(), comm.size());
    let mut left_max = [0u64];
    if r > 0 {
        comm.recv(r - 1, EDGE, &mut left_max)?;
    }
    let ok = keys.first().map_or(true, |&lo| left_max[0] <= lo);
    let running = keys.last().copied().unwrap_or(0).max(left_max[0]);
    if r + 1 < n {
        comm.send(r + 1, EDGE, &[running])?;
    }
    Ok(ok)
}

pub struct Collected {
    pub keys: Vec<u64>,
    pub lens: Vec<u64>,
    pub edges_ok: bool,
}

/// Every rank's keys on `root`, in rank order, with the per-rank lengths and whether
/// every rank's edge check passed (`Some` on the root only).
pub fn collect(comm: &Comm<World>, keys: &[u64], edge: bool, root: usize) -> dist_runtime::Result<Option<Collected>> {
    let mut lens = vec![0u64; comm.size()];
    comm.all_gather(&[keys.len() as u64], &mut lens)?;
    let counts: Vec<usize> = lens.iter().map(|&c| c as usize).collect();
    let mut flag = [u64::from(edge)];
    if comm.rank() == root {
        let mut all = vec![0u64; counts.iter().sum()];
        comm.gather_v(keys, Some(&mut all[..]), &counts, root)?;
        comm.reduce(&mut flag, ReduceOp::Min, root)?;
        Ok(Some(Collected { keys: all, lens, edges_ok: flag[0] == 1 }))
    } else {
        comm.gather_v(keys, None, &counts, root)?;
        comm.reduce(&mut flag, ReduceOp::Min, root)?;
        Ok(None)
    }
}

/// Number of positions where `got` differs from `want`, plus any length difference.
pub fn differences(got: &[u64], want: &[u64]) -> usize {
    got.iter().zip(want).filter(|(a, b)| a != b).count() + got.len().abs_diff(want.len())
}
