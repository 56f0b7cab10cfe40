//! Non-power-of-two worlds: the ranks past the largest power of two hand their keys
//! to a partner inside it and sit the sort out.

use crate::exchange::{pull_keys, push_keys};
use crate::data::merge;
use dist_runtime::prelude::*;

/// The largest power of two not above `n` (n >= 1).
pub fn cube_size(n: usize) -> usize {
    1 << (usize::BITS - 1 - n.leading_zeros())
}

/// Whether this rank takes part in the hypercube.
pub fn is_active(rank: usize, n: usize) -> bool {
    rank < cube_size(n)
}

/// Folds the extra ranks' keys into the cube: rank `p + i` sends to rank `i`.
/// Every rank's `keys` must be sorted; the result is sorted (and empty on extra ranks).
pub fn fold_in(world: &Comm<World>, keys: Vec<u64>) -> dist_runtime::Result<Vec<u64>> {
    let (r, n) = (world.rank(), world.size());
    let p = cube_size(n);
    if r >= p {
        push_keys(world, r - p, &keys)?;
        Ok(Vec::new())
    } else if r + p < n {
        let extra = pull_keys(world, r + p)?;
        Ok(merge(&keys, &extra))
    } else {
        Ok(keys)
    }
}
