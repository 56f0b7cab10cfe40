//! The distributed transpose: a row slab of an `R x C` matrix becomes a row slab of
//! its `C x R` transpose with one all-to-all per chunk of source rows.

use dist_runtime::prelude::*;

use crate::layout::BlockLayout;

dist_runtime::group!(pub Slab);

/// How many of a rank's `rows` fall in chunk `t` of `chunk` rows.
fn rows_in_chunk(rows: usize, t: usize, chunk: usize) -> usize {
    rows.saturating_sub(t * chunk).min(chunk)
}

pub struct Transposer {
    comm: Comm<Slab>,
    /// Source rows over the ranks (= target columns).
    rows: BlockLayout,
    /// Source columns over the ranks (= target rows).
    cols: BlockLayout,
    chunk: usize,
}

impl Transposer {
    pub fn new(comm: &Comm<Slab>, rows: usize, cols: usize, chunk: usize) -> Self {
        let q = comm.size();
        Transposer { comm: comm.clone(), rows: BlockLayout::new(rows, q), cols: BlockLayout::new(cols, q), chunk: chunk.max(1) }
    }

    /// Layout of the result's rows.
    pub fn out_layout(&self) -> &BlockLayout {
        &self.cols
    }

    /// `local` holds this rank's source rows (row-major, `cols.total` wide); returns
    /// this rank's rows of the transpose (row-major, `rows.total` wide).
    pub fn forward(&self, local: &[f64]) -> dist_runtime::Result<Vec<f64>> {
        let (me, q) = (self.comm.rank(), self.comm.size());
        let width = self.cols.total;
        let my_rows = self.rows.count(me);
        let my_cols = self.cols.range(me);
        assert_eq!(local.len(), my_rows * width);
        let mut out = vec![0.0; my_cols.len() * self.rows.total];

        // Every rank runs the same number of exchanges: enough for the largest slab.
        let nchunks = self.rows.max_count().div_ceil(self.chunk).max(1);
        for t in 0..nchunks {
            let h = rows_in_chunk(my_rows, t, self.chunk);
            let first = t * self.chunk;
            // Block for rank m: my chunk rows x m's columns, packed column by column.
            let send: Vec<f64> = (0..q)
                .flat_map(|m| self.cols.range(m))
                .flat_map(|c| (first..first + h).map(move |i| local[i * width + c]))
                .collect();
            let send_counts: Vec<usize> = (0..q).map(|m| h * self.cols.count(m)).collect();
            let recv_counts: Vec<usize> =
                (0..q).map(|k| rows_in_chunk(self.rows.count(k), t, self.chunk) * my_cols.len()).collect();
            let mut recv = vec![0.0; recv_counts.iter().sum()];
            self.comm.all_to_all_v(&send, &send_counts, &mut recv, &recv_counts)?;

            // From rank k: rows_in_chunk(k) source rows for each of my columns.
            let mut at = 0;
            for k in 0..q {
                let hk = rows_in_chunk(self.rows.count(k), t, self.chunk);
                let row0 = self.rows.starts[k] + first;
                for j in 0..my_cols.len() {
                    let dst = j * self.rows.total + row0;
                    out[dst..dst + hk].copy_from_slice(&recv[at..at + hk]);
                    at += hk;
                }
            }
        }
        Ok(out)
    }
}

/// Gathers every rank's slab on rank 0 of `comm` (`counts[k]` elements from rank k).
pub fn gather_to_root(comm: &Comm<Slab>, mine: &[f64], counts: &[usize]) -> dist_runtime::Result<Option<Vec<f64>>> {
    if comm.rank() == 0 {
        let mut all = vec![0.0; counts.iter().sum()];
        comm.gather_v(mine, Some(&mut all[..]), counts, 0)?;
        Ok(Some(all))
    } else {
        comm.gather_v(mine, None, counts, 0)?;
        Ok(None)
    }
}

/// The largest |coefficient| of the matrix whose rows `layout` spreads over the
/// ranks of `comm`, `width` wide: (global row, column, magnitude), on every rank.
pub fn find_peak(comm: &Comm<Slab>, local: &[f64], layout: &BlockLayout, width: usize) -> dist_runtime::Result<(usize, usize, f64)> {
    let me = comm.rank();
    let (idx, mag) = crate::dct::peak(local).unwrap_or((0, -1.0));
    let mut maxima = vec![0.0; comm.size()];
    comm.all_gather(&[mag], &mut maxima)?;
    let best = maxima.iter().copied().fold(f64::MIN, f64::max);
    let owner = maxima.iter().position(|&m| m == best).unwrap_or(0);

    let mut pos = [0u64; 2];
    if me == owner {
        pos = [(layout.starts[me] + idx / width.max(1)) as u64, (idx % width.max(1)) as u64];
    }
    comm.broadcast(&mut pos, owner)?;
    Ok((pos[0] as usize, pos[1] as usize, best))
}
