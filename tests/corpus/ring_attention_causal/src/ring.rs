//! The ring pass: K/V blocks go around the ring, one hop per step; each rank attends
//! its queries to the blocks at or below the diagonal.

use dist_runtime::prelude::*;

use crate::args::Exchange;
use crate::attention::Online;
use crate::layout::Layout;

const KV: Tag<f64> = Tag::new(7);

/// This rank's attention output rows.
pub fn ring_attention(
    world: &Comm<World>,
    lay: &Layout,
    q_mine: &[f64],
    kv_mine: Vec<f64>,
    heads: usize,
    dim: usize,
    exchange: Exchange,
) -> dist_runtime::Result<Vec<f64>> {
    let (r, n) = (world.rank(), world.size());
    let (next, prev) = ((r + 1) % n, (r + n - 1) % n);
    let (q0, _) = lay.block(r);
    let half = lay.max_rows() * lay.width;
    let mut state = Online::new(lay.rows(r), heads, dim);
    // Double buffer: `cur` is attended to (and sent on) while `nxt` receives.
    let mut cur = kv_mine;
    let mut nxt = vec![0.0; cur.len()];
    for step in 0..n {
        let owner = (r + n - step) % n;
        let (k0, _) = lay.block(owner);
        // Blocks after ours are entirely masked: skip their arithmetic, not their hop.
        let needed = owner <= r;
        if step + 1 == n {
            if needed {
                state.update(q_mine, q0, &cur, half, k0, lay.rows(owner));
            }
            break;
        }
        match exchange {
            Exchange::Overlapped => {
                let recv = world.irecv(prev, KV, &mut nxt)?;
                let send = world.isend(next, KV, &cur)?;
                if needed {
                    state.update(q_mine, q0, &cur, half, k0, lay.rows(owner));
                }
                send.wait()?;
                recv.wait()?;
            }
            Exchange::SendRecv => {
                if needed {
                    state.update(q_mine, q0, &cur, half, k0, lay.rows(owner));
                }
                world.sendrecv(next, KV, &cur, prev, &mut nxt)?;
            }
        }
        std::mem::swap(&mut cur, &mut nxt);
    }
    Ok(state.finish())
}
