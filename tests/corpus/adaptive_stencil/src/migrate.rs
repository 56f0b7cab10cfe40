//! Moving cells to their new owners.

use dist_runtime::prelude::*;
use dist_runtime::Result;

use crate::partition::Partition;

/// Sends each of this rank's cells (`interior`, without ghosts) to its owner under
/// `next` and returns the cells this rank owns there, with room for two ghosts.
pub fn migrate(world: &Comm<World>, interior: &[f64], old: &Partition, next: &Partition) -> Result<Vec<f64>> {
    let rank = world.rank();
    let send_counts = old.send_counts(next, rank);
    let recv_counts = old.recv_counts(next, rank);
    let mut mine = vec![0.0; recv_counts.iter().sum()];
    world.all_to_all_v(interior, &send_counts, &mut mine, &recv_counts)?;
    let mut with_ghosts = Vec::with_capacity(mine.len() + 2);
    with_ghosts.push(0.0);
    with_ghosts.extend_from_slice(&mine);
    with_ghosts.push(0.0);
    Ok(with_ghosts)
}
