//! The global transpose between row slabs and column slabs, one `all_to_all_v`.

use crate::dft::C;
use crate::layout::BlockDist;
use dist_runtime::prelude::*;

pub struct SlabTranspose {
    comm: Comm<World>,
    rows: BlockDist,
    cols: BlockDist,
    /// Complex values this rank has sent so far (for the report).
    pub moved: usize,
}

impl SlabTranspose {
    pub fn new(comm: &Comm<World>, n: usize, m: usize) -> Self {
        let p = comm.size();
        SlabTranspose { comm: comm.clone(), rows: BlockDist::new(n, p), cols: BlockDist::new(m, p), moved: 0 }
    }

    pub fn my_rows(&self) -> std::ops::Range<usize> {
        self.rows.range(self.comm.rank())
    }

    pub fn my_cols(&self) -> std::ops::Range<usize> {
        self.cols.range(self.comm.rank())
    }

    /// `slab` holds this rank's rows, row-major (`my_rows().len() × m`). Returns this
    /// rank's columns, each a contiguous run of `n` values (column-major).
    pub fn rows_to_cols(&mut self, slab: &[C]) -> dist_runtime::Result<Vec<C>> {
        let (n, m, p, r) = (self.rows.n, self.cols.n, self.comm.size(), self.comm.rank());
        let my_rows = self.rows.len(r);
        let my_cols = self.cols.len(r);

        // Block j of the send buffer: my rows restricted to j's columns.
        let send: Vec<C> = (0..p)
            .flat_map(|j| {
                let cj = self.cols.range(j);
                (0..my_rows).flat_map(move |a| cj.clone().map(move |c| slab[a * m + c]))
            })
            .collect();
        let send_counts = self.cols.counts_times(my_rows);
        let recv_counts = self.rows.counts_times(my_cols);
        let mut recv = vec![C::new(0.0, 0.0); recv_counts.iter().sum()];
        self.comm.all_to_all_v(&send, &send_counts, &mut recv, &recv_counts)?;
        self.moved += send.len();

        // Block i of recv: i's rows × my columns, row-major.
        let mut out = vec![C::new(0.0, 0.0); my_cols * n];
        let mut at = 0;
        for i in 0..p {
            for a in self.rows.range(i) {
                for c in 0..my_cols {
                    out[c * n + a] = recv[at];
                    at += 1;
                }
            }
        }
        debug_assert_eq!(at, recv.len());
        Ok(out)
    }
}
