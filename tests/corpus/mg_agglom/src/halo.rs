//! Halo exchange between neighbouring ranks of any communicator; the ends of the chain
//! take the Dirichlet boundary value 0.

use dist_runtime::prelude::*;

const RIGHTWARD: Tag<f64> = Tag::new(21);
const LEFTWARD: Tag<f64> = Tag::new(22);

/// Fills `a[0]` and `a[len-1]` from the neighbours' edge values.
pub fn exchange<G: Group>(comm: &Comm<G>, a: &mut [f64]) -> dist_runtime::Result<()> {
    let (r, n) = (comm.rank(), comm.size());
    let last = a.len() - 2;
    let left = r.checked_sub(1);
    let right = (r + 1 < n).then_some(r + 1);
    let mut got = [0.0f64];
    // Rightward: my last owned point becomes my right neighbour's left halo.
    match (left, right) {
        (Some(l), Some(rt)) => {
            comm.sendrecv(rt, RIGHTWARD, &[a[last]], l, &mut got)?;
            a[0] = got[0];
        }
        (None, Some(rt)) => {
            comm.send(rt, RIGHTWARD, &[a[last]])?;
            a[0] = 0.0;
        }
        (Some(l), None) => {
            comm.recv(l, RIGHTWARD, &mut got)?;
            a[0] = got[0];
        }
        (None, None) => a[0] = 0.0,
    }
    // Leftward: my first owned point becomes my left neighbour's right halo.
    match (left, right) {
        (Some(l), Some(rt)) => {
            comm.sendrecv(l, LEFTWARD, &[a[1]], rt, &mut got)?;
            a[last + 1] = got[0];
        }
        (Some(l), None) => {
            comm.send(l, LEFTWARD, &[a[1]])?;
            a[last + 1] = 0.0;
        }
        (None, Some(rt)) => {
            comm.recv(rt, LEFTWARD, &mut got)?;
            a[last + 1] = got[0];
        }
        (None, None) => a[last + 1] = 0.0,
    }
    Ok(())
}
