//! The static split: every rank runs a block of tasks and rank 0 gathers the values.

use crate::task;
use dist_runtime::prelude::*;

pub fn block(tasks: u64, size: usize, r: usize) -> (u64, u64) {
    let (base, extra) = (tasks / size as u64, tasks % size as u64);
    let r = r as u64;
    (r * base + r.min(extra), base + u64::from(r < extra))
}

/// Returns every task's value on rank 0, `None` elsewhere, and this rank's task count.
pub fn run(world: &Comm<World>, seed: u64, tasks: u64) -> dist_runtime::Result<(Option<Vec<f64>>, u64)> {
    let (first, count) = block(tasks, world.size(), world.rank());
    let mine: Vec<f64> = (first..first + count).map(|id| task::run(seed, id)).collect();
    let counts: Vec<usize> = (0..world.size()).map(|r| block(tasks, world.size(), r).1 as usize).collect();
    if world.rank() == 0 {
        let mut all = vec![0.0; tasks as usize];
        world.gather_v(&mine, Some(&mut all[..]), &counts, 0)?;
        Ok((Some(all), count))
    } else {
        world.gather_v(&mine, None, &counts, 0)?;
        Ok((None, count))
    }
}
