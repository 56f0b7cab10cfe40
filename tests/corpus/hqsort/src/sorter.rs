//! The hypercube quicksort proper: pick a pivot in the current sub-cube, swap halves
//! with the partner across the top dimension, then split the sub-cube in two.

use crate::config::PivotRule;
use crate::data::{median, merge};
use crate::exchange::swap_with;
use dist_runtime::prelude::*;

dist_runtime::group!(pub(crate) Cube);

/// Per-level record, for the balance report.
#[derive(Debug, Clone, Copy)]
pub struct LevelStat {
    pub cube: usize,
    pub pivot: u64,
    pub kept: usize,
}

pub struct HyperSorter {
    cube: Comm<Cube>,
    pivot_rule: PivotRule,
    pub stats: Vec<LevelStat>,
}

impl HyperSorter {
    /// Takes the active ranks of the world (those inside the largest power of two);
    /// every world rank calls this (it splits the world), the extra ranks get None.
    pub fn new(world: &Comm<World>, active: bool, pivot_rule: PivotRule) -> dist_runtime::Result<Option<HyperSorter>> {
        let color = if active { 0 } else { 1 };
        let cube = world.split::<Cube>(color, world.rank() as i64)?;
        Ok(active.then(|| HyperSorter { cube, pivot_rule, stats: Vec::new() }))
    }

    /// Chooses the pivot of the current sub-cube. Collective over it.
    fn pivot(&self, keys: &[u64]) -> dist_runtime::Result<u64> {
        match self.pivot_rule {
            PivotRule::RootMedian => {
                // [has a median, the median]
                let root_median = if self.cube.rank() == 0 { median(keys) } else { None };
                let mut msg = [root_median.is_some() as u64, root_median.unwrap_or(0)];
                self.cube.broadcast(&mut msg, 0)?;
                if msg[0] == 1 {
                    return Ok(msg[1]);
                }
                // The root had nothing: fall back to the largest local median.
                let mut m = [median(keys).unwrap_or(0)];
                self.cube.all_reduce(&mut m, ReduceOp::Max)?;
                Ok(m[0])
            }
            PivotRule::MedianOfMedians => {
                let mine = [median(keys).unwrap_or(u64::MAX)];
                let mut all = vec![0u64; self.cube.size()];
                self.cube.all_gather(&mine, &mut all)?;
                let mut present: Vec<u64> = all.into_iter().filter(|&m| m != u64::MAX).collect();
                present.sort_unstable();
                Ok(median(&present).unwrap_or(0))
            }
        }
    }

    /// Sorts `keys` (locally sorted on entry) across the cube: on return rank i of the
    /// cube holds keys no greater than any key of rank i + 1, sorted.
    pub fn sort(&mut self, mut keys: Vec<u64>) -> dist_runtime::Result<Vec<u64>> {
        while self.cube.size() > 1 {
            let (r, size) = (self.cube.rank(), self.cube.size());
            let half = size / 2;
            let pivot = self.pivot(&keys)?;
            let upper = r >= half;
            let cut = keys.partition_point(|&k| k <= pivot);
            let (low, high) = keys.split_at(cut);
            let (keep, give) = if upper { (high, low) } else { (low, high) };
            let got = swap_with(&self.cube, r ^ half, give)?;
            let merged = merge(keep, &got);
            self.stats.push(LevelStat { cube: size, pivot, kept: merged.len() });
            keys = merged;
            // Recurse into the half this rank belongs to.
            self.cube = self.cube.split::<Cube>(upper as u32, r as i64)?;
        }
        Ok(keys)
    }
}
