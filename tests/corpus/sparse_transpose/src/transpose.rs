//! The distributed transpose and y = Aᵀx on its rows.

use crate::csr::{BlockDist, Csr, Entry};
use crate::exchange::{Buckets, ExchangeError, Exchanger};
use dist_runtime::prelude::*;

/// This rank's rows of Aᵀ, given its rows of A. Row j of Aᵀ (column j of A) belongs
/// to `tdist.owner(j)`; `nrows` is A's global row count (Aᵀ's column count).
pub fn distributed_transpose(
    comm: &Comm<World>,
    a: &Csr,
    nrows: usize,
    tdist: BlockDist,
    ex: &dyn Exchanger,
) -> Result<Csr, ExchangeError> {
    let mut buckets = Buckets::new(comm.size());
    for e in a.entries() {
        buckets.push(tdist.owner(e.col), Entry { row: e.col, col: e.row, val: e.val });
    }
    let got = ex.exchange(comm, &buckets)?;
    let mine = tdist.range(comm.rank());
    if let Some(e) = got.iter().find(|e| !mine.contains(&e.row)) {
        return Err(ExchangeError::Misrouted { row: e.row, owner: comm.rank() });
    }
    Ok(Csr::from_entries(mine.start, mine.len(), nrows, got))
}

/// y = Aᵀx with this rank's rows of Aᵀ and the whole x; the blocks of y are gathered
/// on `root`, which returns the whole y.
pub fn spmv_t(
    comm: &Comm<World>,
    at: &Csr,
    x: &[f64],
    tdist: BlockDist,
    root: usize,
) -> Result<Option<Vec<f64>>, ExchangeError> {
    let y_local = at.matvec(x);
    let counts = tdist.counts();
    if comm.rank() == root {
        let mut y = vec![0.0; tdist.n];
        comm.gather_v(&y_local, Some(&mut y), &counts, root)?;
        Ok(Some(y))
    } else {
        comm.gather_v(&y_local, None, &counts, root)?;
        Ok(None)
    }
}
