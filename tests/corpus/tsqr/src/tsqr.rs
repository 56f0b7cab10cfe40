//! The TSQR reduction: R factors combined pairwise up a binary tree of ranks.

use dist_runtime::prelude::*;

use crate::linalg;

/// R factors travelling up the tree.
const R_FACTOR: Tag<f64> = Tag::new(1);

/// Combine every rank's R factor of its block of [A | b] (`k` columns of A, so R is
/// `(k + 1) x (k + 1)`) into the R of the whole stacked matrix.
///
/// At step s (1, 2, 4, ...) a rank with `rank % 2s == 0` receives its partner
/// `rank + s`'s factor, if that rank exists, and re-factors the pair; the partner
/// sends and is done. Rank 0 ends with the R of all rows; the others get `None`.
pub fn tree_reduce_r(comm: &Comm<World>, mut r: Vec<f64>, k: usize, verbose: bool) -> dist_runtime::Result<Option<Vec<f64>>> {
    let (rank, size) = (comm.rank(), comm.size());
    let w = k + 1;
    let mut other = vec![0.0; w * w];
    let mut step = 1;
    while step < size {
        if rank % (2 * step) == 0 {
            let partner = rank + step;
            if partner < size {
                comm.recv(partner, R_FACTOR, &mut other)?;
                r = linalg::combine_r(&r, &other, w);
                if verbose {
                    println!("step {step}: combined R from rank {partner}");
                }
            }
        } else {
            let parent = rank - step;
            comm.send(parent, R_FACTOR, &r)?;
            if verbose {
                println!("step {step}: sent R to rank {parent}");
            }
            return Ok(None);
        }
        step *= 2;
    }
    Ok(Some(r))
}
