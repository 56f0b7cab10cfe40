//! Collectives written with point-to-point messages only (binomial trees, recursive
//! doubling, a ring), generic over the communicator.

use dist_runtime::prelude::*;
use dist_runtime::Group;

const BCAST: Tag<i64> = Tag::new(10);
const REDUCE: Tag<i64> = Tag::new(11);
const ALLRED: Tag<i64> = Tag::new(12);
const RING: Tag<i64> = Tag::new(13);

/// The reductions our hand-written collectives support.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Sum,
    Max,
    Min,
}

impl Op {
    pub fn apply(self, acc: &mut [i64], x: &[i64]) {
        for (a, &b) in acc.iter_mut().zip(x) {
            *a = match self {
                Op::Sum => a.wrapping_add(b),
                Op::Max => (*a).max(b),
                Op::Min => (*a).min(b),
            };
        }
    }

    pub fn to_dist(self) -> ReduceOp {
        match self {
            Op::Sum => ReduceOp::Sum,
            Op::Max => ReduceOp::Max,
            Op::Min => ReduceOp::Min,
        }
    }
}

/// Rank relative to `root`, and back.
fn rel(rank: usize, root: usize, n: usize) -> usize {
    (rank + n - root) % n
}

fn abs(vrank: usize, root: usize, n: usize) -> usize {
    (vrank + root) % n
}

/// Binomial-tree broadcast from `root`.
pub fn broadcast<G: Group>(comm: &Comm<G>, buf: &mut [i64], root: usize) -> dist_runtime::Result<()> {
    let (n, me) = (comm.size(), comm.rank());
    let vr = rel(me, root, n);
    // Receive from the parent: the rank that differs in our lowest set bit.
    let mut mask = 1;
    while mask < n {
        if vr & mask != 0 {
            comm.recv(abs(vr ^ mask, root, n), BCAST, buf)?;
            break;
        }
        mask <<= 1;
    }
    // Forward to the children below that bit.
    mask >>= 1;
    while mask > 0 {
        if vr + mask < n {
            comm.send(abs(vr + mask, root, n), BCAST, buf)?;
        }
        mask >>= 1;
    }
    Ok(())
}

/// Binomial-tree reduce to `root` (commutative ops); other ranks' `buf` is scratch.
pub fn reduce<G: Group>(comm: &Comm<G>, buf: &mut [i64], op: Op, root: usize) -> dist_runtime::Result<()> {
    let (n, me) = (comm.size(), comm.rank());
    let vr = rel(me, root, n);
    let mut tmp = vec![0i64; buf.len()];
    let mut mask = 1;
    while mask < n {
        if vr & mask == 0 {
            let child = vr | mask;
            if child < n {
                comm.recv(abs(child, root, n), REDUCE, &mut tmp)?;
                op.apply(buf, &tmp);
            }
        } else {
            comm.send(abs(vr ^ mask, root, n), REDUCE, buf)?;
            break;
        }
        mask <<= 1;
    }
    Ok(())
}

/// Recursive-doubling all-reduce; for a world size that is not a power of two the
/// first `2 * rem` ranks pair up first (even ones hand their data to the odd ones and
/// sit out), and get the result back at the end.
pub fn all_reduce<G: Group>(comm: &Comm<G>, buf: &mut [i64], op: Op) -> dist_runtime::Result<()> {
    let (n, me) = (comm.size(), comm.rank());
    let pof2 = if n == 0 { 0 } else { 1usize << (usize::BITS - 1 - n.leading_zeros()) };
    let rem = n - pof2;
    let mut tmp = vec![0i64; buf.len()];

    let newrank = if me < 2 * rem {
        if me % 2 == 0 {
            comm.send(me + 1, ALLRED, buf)?;
            None
        } else {
            comm.recv(me - 1, ALLRED, &mut tmp)?;
            op.apply(buf, &tmp);
            Some(me / 2)
        }
    } else {
        Some(me - rem)
    };

    if let Some(nr) = newrank {
        let mut mask = 1;
        while mask < pof2 {
            let partner = nr ^ mask;
            let dst = if partner < rem { partner * 2 + 1 } else { partner + rem };
            comm.sendrecv(dst, ALLRED, buf, dst, &mut tmp)?;
            op.apply(buf, &tmp);
            mask <<= 1;
        }
    }

    // Fix-up: hand the result back to the ranks that sat out.
    if me < 2 * rem {
        if me % 2 == 1 {
            comm.send(me - 1, ALLRED, buf)?;
        } else {
            comm.recv(me + 1, ALLRED, buf)?;
        }
    }
    Ok(())
}

/// Ring all-gather: `out` has `size() * mine.len()` items; after `n - 1` steps every
/// rank has every block. Each step posts the receive and the send together.
pub fn all_gather_ring<G: Group>(comm: &Comm<G>, mine: &[i64], out: &mut [i64]) -> dist_runtime::Result<()> {
    let (n, me) = (comm.size(), comm.rank());
    let m = mine.len();
    assert_eq!(out.len(), n * m, "all_gather_ring: output must hold size() blocks");
    out[me * m..(me + 1) * m].copy_from_slice(mine);
    let (next, prev) = ((me + 1) % n, (me + n - 1) % n);
    let mut incoming = vec![0i64; m];
    for step in 0..n.saturating_sub(1) {
        let send_block = (me + n - step) % n;
        let recv_block = (me + n - step - 1) % n;
        let outgoing = out[send_block * m..(send_block + 1) * m].to_vec();
        let rq = comm.irecv(prev, RING, &mut incoming)?;
        let sq = comm.isend(next, RING, &outgoing)?;
        dist_runtime::wait_all(vec![rq, sq])?;
        out[recv_block * m..(recv_block + 1) * m].copy_from_slice(&incoming);
    }
    Ok(())
}
