//! Coarse-level agglomeration: below a size threshold the ranks of the world fold into
//! `k` contiguous agglomeration groups; each group's first rank gathers the group's
//! points, the first ranks together (the coarse group) solve, and the correction is
//! scattered back.

use crate::grid::Level;
use dist_runtime::prelude::*;

dist_runtime::group!(pub(crate) Agg);
dist_runtime::group!(pub(crate) Coarse);

/// Which of `k` groups world rank `r` of `n` joins.
pub fn agg_color(r: usize, n: usize, k: usize) -> usize {
    r * k / n
}

/// The first world rank of each group: the coarse group's members.
pub fn group_leaders(n: usize, k: usize) -> Vec<usize> {
    (0..n).filter(|&r| r == 0 || agg_color(r, n, k) != agg_color(r - 1, n, k)).collect()
}

pub struct Agglomerator {
    agg: Comm<Agg>,
    /// Points each member of my group owns at the agglomeration level.
    counts: Vec<usize>,
    /// The level as the coarse group partitions it (Some on group leaders).
    pub merged: Option<Level>,
}

impl Agglomerator {
    /// Collective over the world. `level` is this rank's part of the level being
    /// agglomerated. Returns the agglomerator and, on leaders, the coarse group.
    pub fn new(world: &Comm<World>, level: &Level, k: usize) -> dist_runtime::Result<(Agglomerator, Option<Comm<Coarse>>)> {
        let (r, n) = (world.rank(), world.size());
        let agg = world.split::<Agg>(agg_color(r, n, k) as u32, r as i64)?;
        let mut counts64 = vec![0u64; agg.size()];
        agg.all_gather(&[level.count() as u64], &mut counts64)?;
        let counts: Vec<usize> = counts64.iter().map(|&c| c as usize).collect();
        let coarse = world.subgroup::<Coarse>(&group_leaders(n, k))?;
        let merged = (agg.rank() == 0).then(|| Level { m: level.m, lo: level.lo, hi: level.lo + counts.iter().sum::<usize>() });
        Ok((Agglomerator { agg, counts, merged }, coarse))
    }

    /// Gathers the group's owned values (no halos) onto the leader, as a local array
    /// of the merged level (with halo cells).
    pub fn gather(&self, local: &[f64]) -> dist_runtime::Result<Option<Vec<f64>>> {
        let owned = &local[1..local.len() - 1];
        match &self.merged {
            Some(m) => {
                let mut all = m.zeros();
                let n = m.count();
                self.agg.gather_v(owned, Some(&mut all[1..=n]), &self.counts, 0)?;
                Ok(Some(all))
            }
            None => {
                self.agg.gather_v(owned, None, &self.counts, 0)?;
                Ok(None)
            }
        }
    }

    /// Scatters the leader's merged array back: each member's owned values.
    pub fn scatter(&self, merged: Option<&[f64]>, local: &mut [f64]) -> dist_runtime::Result<()> {
        let n = local.len() - 2;
        let send = merged.map(|m| &m[1..m.len() - 1]);
        self.agg.scatter_v(send, &mut local[1..=n], &self.counts, 0)
    }
}
