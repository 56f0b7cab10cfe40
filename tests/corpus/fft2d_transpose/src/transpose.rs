//! The global transpose of a row-block distributed matrix with `all_to_all_v`.

use crate::dft::C64;
use crate::layout::{block, block_len};
use dist_runtime::prelude::*;
use dist_runtime::Group;

/// Counts (in elements) that this rank sends to and receives from every peer when an
/// `rows × cols` matrix, distributed by row blocks, is transposed into `cols × rows`
/// distributed by row blocks.
pub fn counts(rows: usize, cols: usize, n: usize, me: usize) -> (Vec<usize>, Vec<usize>) {
    let my_rows = block_len(rows, n, me);
    let my_cols = block_len(cols, n, me);
    let send = (0..n).map(|j| my_rows * block_len(cols, n, j)).collect();
    let recv = (0..n).map(|k| block_len(rows, n, k) * my_cols).collect();
    (send, recv)
}

/// `local` holds this rank's rows of an `rows × cols` matrix (row-major); returns this
/// rank's rows of the `cols × rows` transpose.
pub fn transpose<G: Group>(comm: &Comm<G>, local: &[C64], rows: usize, cols: usize) -> dist_runtime::Result<Vec<C64>> {
    let (n, me) = (comm.size(), comm.rank());
    let my_rows = block_len(rows, n, me);
    assert_eq!(local.len(), my_rows * cols, "local block has the wrong shape");
    let (send_counts, recv_counts) = counts(rows, cols, n, me);

    // Pack: for each destination, its columns in order, each as a run of our rows.
    let mut sendbuf = Vec::with_capacity(local.len());
    for j in 0..n {
        let (c0, c1) = block(cols, n, j);
        for c in c0..c1 {
            sendbuf.extend((0..my_rows).map(|i| local[i * cols + c]));
        }
    }
    let mut recvbuf = vec![C64::new(0.0, 0.0); recv_counts.iter().sum()];
    comm.all_to_all_v(&sendbuf, &send_counts, &mut recvbuf, &recv_counts)?;

    // Unpack: the piece from rank k is (our columns) × (k's rows).
    let my_cols = block_len(cols, n, me);
    let mut out = vec![C64::new(0.0, 0.0); my_cols * rows];
    let mut at = 0;
    for k in 0..n {
        let (r0, r1) = block(rows, n, k);
        for c in 0..my_cols {
            for i in r0..r1 {
                out[c * rows + i] = recvbuf[at];
                at += 1;
            }
        }
    }
    debug_assert_eq!(at, recvbuf.len());
    Ok(out)
}
