//! Gathers every rank's result rows onto rank 0.

use crate::table::Rows;
use dist_runtime::prelude::*;

/// Row-major copy: key, then each column.
fn flatten(rows: &Rows) -> Vec<u64> {
    (0..rows.len())
        .flat_map(|i| std::iter::once(rows.keys[i]).chain(rows.cols.iter().map(move |c| c[i])))
        .collect()
}

fn unflatten(flat: &[u64], ncols: usize) -> Rows {
    let mut out = Rows::with_columns(ncols);
    for row in flat.chunks_exact(ncols + 1) {
        out.push(row[0], &row[1..]);
    }
    out
}

/// All ranks' rows on `root` (Some there, None elsewhere). Every rank's rows must have
/// the same number of columns.
pub fn gather_rows(world: &Comm<World>, rows: &Rows, root: usize) -> dist_runtime::Result<Option<Rows>> {
    let width = rows.cols.len() + 1;
    let mut lens = vec![0u64; world.size()];
    world.all_gather(&[rows.len() as u64], &mut lens)?;
    let counts: Vec<usize> = lens.iter().map(|&l| l as usize * width).collect();
    let flat = flatten(rows);
    if world.rank() == root {
        let mut all = vec![0u64; counts.iter().sum()];
        world.gather_v(&flat, Some(&mut all[..]), &counts, root)?;
        Ok(Some(unflatten(&all, rows.cols.len())))
    } else {
        world.gather_v(&flat, None, &counts, root)?;
        Ok(None)
    }
}
