//! Checks of the sorted result: order across rank boundaries, and equality with a
//! serial sort of every rank's keys on rank 0.

use dist_runtime::prelude::*;

use crate::config::Config;
use crate::error::{Result, SortError};
use crate::keys::{generate, Layout};

const BOUNDARY: Tag<u32> = Tag::new(7);

/// Counts the descents inside this rank's keys and across its left boundary, summed
/// over every rank.
pub fn count_descents(world: &Comm<World>, keys: &[u32]) -> Result<u64> {
    let (r, n) = (world.rank(), world.size());
    let local = keys.windows(2).filter(|w| w[0] > w[1]).count() as u64;

    let last = [*keys.last().unwrap_or(&0)];
    let to_right = if r + 1 < n { Some(world.isend(r + 1, BOUNDARY, &last)?) } else { None };
    let mut left_last = [0u32];
    let mut across = 0;
    if r > 0 {
        world.recv(r - 1, BOUNDARY, &mut left_last)?;
        if keys.first().is_some_and(|&k| k < left_last[0]) {
            across = 1;
        }
    }
    if let Some(req) = to_right {
        req.wait()?;
    }

    let mut total = [local + across];
    world.all_reduce(&mut total, ReduceOp::Sum)?;
    Ok(total[0])
}

/// Gathers the sorted keys on `root` and compares them with a serial sort of all the
/// generated keys. Returns the number of keys checked on `root`, `None` elsewhere.
pub fn against_serial(
    world: &Comm<World>,
    cfg: &Config,
    layout: &Layout,
    keys: &[u32],
    root: usize,
) -> Result<Option<usize>> {
    if world.rank() == root {
        let mut all = vec![0u32; layout.total()];
        world.gather_v(keys, Some(&mut all[..]), &layout.counts, root)?;
        let mut want: Vec<u32> =
            (0..world.size()).flat_map(|r| generate(cfg.seed, r, cfg.keys_on(r), cfg.key_mask())).collect();
        want.sort_unstable();
        if let Some(i) = (0..want.len()).find(|&i| all[i] != want[i]) {
            return Err(SortError::Verify(format!("position {i}: got {:#x}, serial sort has {:#x}", all[i], want[i])));
        }
        Ok(Some(want.len()))
    } else {
        world.gather_v(keys, None, &layout.counts, root)?;
        Ok(None)
    }
}
