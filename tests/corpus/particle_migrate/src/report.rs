//! Global statistics and the final gather of every particle on one rank.

use crate::config::GatherMode;
use crate::particle::{momentum, pack, unpack, Particle, FIELDS};
use dist_runtime::prelude::*;

/// Total particle count and momentum over all ranks.
pub fn global_stats(world: &Comm<World>, ps: &[Particle]) -> dist_runtime::Result<(u64, f64)> {
    let mut count = [ps.len() as u64];
    world.all_reduce(&mut count, ReduceOp::Sum)?;
    let mut p = [momentum(ps)];
    world.all_reduce(&mut p, ReduceOp::Sum)?;
    Ok((count[0], p[0]))
}

/// Every rank's particles on `root`, sorted by id (`None` elsewhere).
pub fn gather_all(
    world: &Comm<World>,
    ps: &[Particle],
    mode: GatherMode,
    root: usize,
) -> dist_runtime::Result<Option<Vec<Particle>>> {
    let mut all = match mode {
        GatherMode::Packed => {
            let mut counts = vec![0u64; world.size()];
            world.all_gather(&[ps.len() as u64], &mut counts)?;
            let counts: Vec<usize> = counts.iter().map(|&c| c as usize * FIELDS).collect();
            let mine = pack(ps);
            if world.rank() == root {
                let mut buf = vec![0.0; counts.iter().sum()];
                world.gather_v(&mine, Some(&mut buf[..]), &counts, root)?;
                unpack(&buf)
            } else {
                world.gather_v(&mine, None, &counts, root)?;
                return Ok(None);
            }
        }
        GatherMode::Object => {
            let mine: Vec<(u64, f64, f64, f64)> = ps.iter().map(|p| (p.id, p.x, p.v, p.m)).collect();
            match world.gather_object(&mine, root)? {
                Some(per_rank) => per_rank
                    .into_iter()
                    .flatten()
                    .map(|(id, x, v, m)| Particle { id, x, v, m })
                    .collect::<Vec<_>>(),
                None => return Ok(None),
            }
        }
    };
    all.sort_by_key(|p| p.id);
    Ok(Some(all))
}
