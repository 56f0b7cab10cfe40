//! Block-row decomposition of the grid over the ranks.

/// The rows one rank owns, and who owns the rows next to them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    /// Global index of the first owned row.
    pub first: usize,
    /// Number of owned rows.
    pub rows: usize,
    /// The rank owning the rows just above, if any.
    pub up: Option<usize>,
    /// The rank owning the rows just below, if any.
    pub down: Option<usize>,
}

/// Rows `[first, first + len)` of `total` for `rank` of `n`: the first `total % n`
/// ranks take one row more.
pub fn share(total: usize, n: usize, rank: usize) -> (usize, usize) {
    let base = total / n;
    let extra = total % n;
    let len = base + usize::from(rank < extra);
    let first = rank * base + rank.min(extra);
    (first, len)
}

impl Block {
    pub fn new(total_rows: usize, n: usize, rank: usize) -> Block {
        let (first, rows) = share(total_rows, n, rank);
        let up = if rank > 0 { Some(rank - 1) } else { None };
        let down = if rank + 1 < n { Some(rank + 1) } else { None };
        Block { first, rows, up, down }
    }

    /// Owned rows of every rank, times `cols`: the counts of the checkpoint gather.
    pub fn counts(total_rows: usize, n: usize, cols: usize) -> Vec<usize> {
        (0..n).map(|r| share(total_rows, n, r).1 * cols).collect()
    }

    /// Is global row `g` one the solver holds fixed?
    pub fn is_edge_row(g: usize, total_rows: usize) -> bool {
        g == 0 || g + 1 == total_rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_tile_the_rows() {
        for n in 1..=9 {
            let mut next = 0;
            for r in 0..n {
                let (first, len) = share(50, n, r);
                assert_eq!(first, next);
                next += len;
            }
            assert_eq!(next, 50);
        }
    }
}
