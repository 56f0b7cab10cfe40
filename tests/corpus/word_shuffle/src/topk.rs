//! Local reduction, top-k selection, the gather of candidates to rank 0 and the
//! broadcast of the final table.

use dist_runtime::prelude::*;
use std::collections::BTreeMap;

/// Merges the pairs this rank owns.
pub fn reduce_pairs(pairs: &[(u64, u64)]) -> BTreeMap<u64, u64> {
    pairs.iter().fold(BTreeMap::new(), |mut m, &(k, c)| {
        *m.entry(k).or_insert(0) += c;
        m
    })
}

/// The k largest counts, ties broken by the smaller key.
pub fn top_k(counts: impl IntoIterator<Item = (u64, u64)>, k: usize) -> Vec<(u64, u64)> {
    let mut all: Vec<(u64, u64)> = counts.into_iter().collect();
    all.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    all.truncate(k);
    all
}

fn flatten(t: &[(u64, u64)]) -> Vec<u64> {
    t.iter().flat_map(|&(k, c)| [k, c]).collect()
}

/// Gathers every rank's candidates on rank 0, which keeps the global top k. `Some` on
/// rank 0 only.
pub fn gather_top(world: &Comm<World>, mine: &[(u64, u64)], k: usize) -> dist_runtime::Result<Option<Vec<(u64, u64)>>> {
    let mut lens = vec![0u64; world.size()];
    world.all_gather(&[mine.len() as u64], &mut lens)?;
    let counts: Vec<usize> = lens.iter().map(|&l| 2 * l as usize).collect();
    let flat = flatten(mine);
    if world.rank() == 0 {
        let mut all = vec![0u64; counts.iter().sum()];
        world.gather_v(&flat, Some(&mut all[..]), &counts, 0)?;
        let pairs = all.chunks_exact(2).map(|p| (p[0], p[1]));
        Ok(Some(top_k(pairs, k)))
    } else {
        world.gather_v(&flat, None, &counts, 0)?;
        Ok(None)
    }
}

/// Rank 0's table to every rank: its length, then the pairs.
pub fn broadcast_table(world: &Comm<World>, table: Option<Vec<(u64, u64)>>, root: usize) -> dist_runtime::Result<Vec<(u64, u64)>> {
    let mut len = [table.as_ref().map_or(0, |t| t.len() as u64)];
    world.broadcast(&mut len, root)?;
    let mut flat = table.map_or_else(|| vec![0u64; 2 * len[0] as usize], |t| flatten(&t));
    world.broadcast(&mut flat, root)?;
    Ok(flat.chunks_exact(2).map(|p| (p[0], p[1])).collect())
}
