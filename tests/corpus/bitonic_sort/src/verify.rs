//! Checks: sorted across rank boundaries, and equal to a serial sort.

use dist_runtime::prelude::*;

use crate::config::Config;
use crate::keys::key;

const BOUNDARY: Tag<i64> = Tag::new(20);

/// Each rank's first key must not be below its left neighbour's last one.
pub fn globally_sorted(comm: &Comm<World>, keys: &[i64]) -> dist_runtime::Result<bool> {
    let (r, p) = (comm.rank(), comm.size());
    let last = [keys.last().copied().unwrap_or(i64::MIN)];
    let mut left = [i64::MIN];
    let mut reqs = Vec::new();
    if r + 1 < p {
        reqs.push(comm.isend(r + 1, BOUNDARY, &last)?);
    }
    if r > 0 {
        reqs.push(comm.irecv(r - 1, BOUNDARY, &mut left)?);
    }
    dist_runtime::wait_all(reqs)?;
    let here = keys.windows(2).all(|w| w[0] <= w[1]) && keys.first().is_none_or(|&k| k >= left[0]);
    let mut ok = [u8::from(here)];
    comm.all_reduce(&mut ok, ReduceOp::Min)?;
    Ok(ok[0] == 1)
}

/// Gathers every rank's keys on rank 0 and compares them with a serial sort there.
pub fn matches_serial(comm: &Comm<World>, cfg: &Config, keys: &[i64]) -> dist_runtime::Result<Option<bool>> {
    let mut lens = vec![0u64; comm.size()];
    comm.all_gather(&[keys.len() as u64], &mut lens)?;
    let counts: Vec<usize> = lens.iter().map(|&c| c as usize).collect();
    if comm.rank() != 0 {
        comm.gather_v(keys, None, &counts, 0)?;
        return Ok(None);
    }
    let mut all = vec![0i64; counts.iter().sum()];
    comm.gather_v(keys, Some(&mut all[..]), &counts, 0)?;
    let mut want: Vec<i64> = (0..cfg.keys).map(|i| key(cfg.seed, i, cfg.range)).collect();
    want.sort_unstable();
    Ok(Some(all == want))
}
