//! Collects the sorted pieces on rank 0 and compares with the serial sort.

use dist_runtime::prelude::*;

pub enum Verdict {
    Match { total: usize, min_piece: usize, max_piece: usize },
    Mismatch { at: usize, got: Option<u64>, want: Option<u64> },
    NotRoot,
}

/// Gathers every rank's sorted piece onto world rank 0 in rank order.
pub fn collect(world: &Comm<World>, piece: &[u64]) -> dist_runtime::Result<(Vec<usize>, Option<Vec<u64>>)> {
    let mut counts64 = vec![0u64; world.size()];
    world.all_gather(&[piece.len() as u64], &mut counts64)?;
    let counts: Vec<usize> = counts64.iter().map(|&c| c as usize).collect();
    if world.rank() == 0 {
        let mut all = vec![0u64; counts.iter().sum()];
        world.gather_v(piece, Some(&mut all[..]), &counts, 0)?;
        Ok((counts, Some(all)))
    } else {
        world.gather_v(piece, None, &counts, 0)?;
        Ok((counts, None))
    }
}

pub fn compare(counts: &[usize], got: Option<&[u64]>, want: &[u64]) -> Verdict {
    let Some(got) = got else { return Verdict::NotRoot };
    if let Some(at) = (0..got.len().max(want.len())).find(|&i| got.get(i) != want.get(i)) {
        return Verdict::Mismatch { at, got: got.get(at).copied(), want: want.get(at).copied() };
    }
    let nonzero = counts.iter().copied().filter(|&c| c > 0);
    Verdict::Match {
        total: got.len(),
        min_piece: nonzero.clone().min().unwrap_or(0),
        max_piece: nonzero.max().unwrap_or(0),
    }
}
