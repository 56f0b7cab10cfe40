//! A hand-written binomial-tree sum of per-lane checksums onto rank 0.

use dist_runtime::prelude::*;

const PARTIAL: Tag<u64> = Tag::new(11);

/// Wrapping element-wise sum of `lanes` over all ranks; `Some` on rank 0 only.
/// At step `s` (1, 2, 4, ...) a rank with bit `s` set sends its partial sum to
/// `rank - s` and is done; a rank with the low bits clear receives from `rank + s`.
pub fn reduce_lanes(comm: &Comm<World>, lanes: &[u64]) -> dist_runtime::Result<Option<Vec<u64>>> {
    let (r, n) = (comm.rank(), comm.size());
    let mut acc = lanes.to_vec();
    let mut incoming = vec![0u64; lanes.len()];
    let mut step = 1;
    while step < n {
        if r % (2 * step) == 0 {
            let src = r + step;
            if src < n {
                comm.recv(src, PARTIAL, &mut incoming)?;
                for (a, b) in acc.iter_mut().zip(&incoming) {
                    *a = a.wrapping_add(*b);
                }
            }
        } else {
            comm.send(r - step, PARTIAL, &acc)?;
            return Ok(None);
        }
        step *= 2;
    }
    Ok(Some(acc))
}
