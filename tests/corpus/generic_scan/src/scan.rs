//! Exclusive scans of one value per rank, by hand over point-to-point messages, and the
//! scan of a block-distributed array built on them.

use dist_runtime::prelude::*;

use crate::monoid::Monoid;

const HS: Tag<u64> = Tag::new(20);
const UP: Tag<u64> = Tag::new(21);
const DOWN: Tag<u64> = Tag::new(22);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algo {
    /// Recursive doubling: log2(n) rounds, every rank busy in each.
    HillisSteele,
    /// Up-sweep / down-sweep over a binary tree of ranks: 2·log2(n) rounds, half the messages.
    Blelloch,
}

impl Algo {
    pub const ALL: [Algo; 2] = [Algo::HillisSteele, Algo::Blelloch];
}

/// Rank r gets `x_0 ⊕ … ⊕ x_{r-1}` (the identity on rank 0), combined in rank order.
pub fn exclusive_scan<G: Group, M: Monoid>(comm: &Comm<G>, x: &M, algo: Algo) -> dist_runtime::Result<M> {
    match algo {
        Algo::HillisSteele => hillis_steele(comm, x),
        Algo::Blelloch => blelloch(comm, x),
    }
}

/// Rank r gets `x_0 ⊕ … ⊕ x_r`.
pub fn inclusive_scan<G: Group, M: Monoid>(comm: &Comm<G>, x: &M, algo: Algo) -> dist_runtime::Result<M> {
    Ok(exclusive_scan(comm, x, algo)?.combine(x))
}

fn hillis_steele<G: Group, M: Monoid>(comm: &Comm<G>, x: &M) -> dist_runtime::Result<M> {
    let (r, n) = (comm.rank(), comm.size());
    // After the round with distance d: incl = x(r-2d, r], excl = x(r-2d, r).
    let (mut incl, mut excl) = (x.clone(), M::identity());
    let mut d = 1;
    while d < n {
        let out = incl.to_words();
        let mut got = vec![0u64; M::WORDS];
        match (r + d < n, r >= d) {
            (true, true) => comm.sendrecv(r + d, HS, &out, r - d, &mut got)?,
            (true, false) => comm.send(r + d, HS, &out)?,
            (false, true) => comm.recv(r - d, HS, &mut got)?,
            (false, false) => {}
        }
        if r >= d {
            let left = M::from_words(&got);
            excl = left.combine(&excl);
            incl = left.combine(&incl);
        }
        d <<= 1;
    }
    Ok(excl)
}

/// Blelloch's scan over ranks. The tree has `p = n.next_power_of_two()` leaves; the
/// `p - n` missing ones are padding at the front (they hold the identity and never
/// talk), so rank r is leaf `v = r + pad`, and every real node's left child that is
/// padding simply contributes nothing.
fn blelloch<G: Group, M: Monoid>(comm: &Comm<G>, x: &M) -> dist_runtime::Result<M> {
    let n = comm.size();
    let p = n.next_power_of_two();
    let pad = p - n;
    let v = comm.rank() + pad;
    let real = |leaf: usize| leaf.checked_sub(pad);

    // Up-sweep: a right child folds its left sibling's subtree sum into its own.
    let mut acc = x.clone();
    let mut d = 1;
    while d < p {
        if (v + 1) % (2 * d) == 0 {
            if let Some(left) = real(v - d) {
                let l = recv_monoid!(comm, left, UP, M)?;
                acc = l.combine(&acc);
            }
        } else if (v + 1) % (2 * d) == d {
            send_monoid!(comm, v + d - pad, UP, acc)?;
        }
        d <<= 1;
    }

    // Down-sweep: the root starts from the identity; each right node hands its prefix to
    // its left child and appends the left child's subtree sum for itself.
    let mut prefix = M::identity();
    let mut d = p / 2;
    while d >= 1 {
        if (v + 1) % (2 * d) == 0 {
            if let Some(left) = real(v - d) {
                send_monoid!(comm, left, DOWN, prefix)?;
                let l = recv_monoid!(comm, left, DOWN, M)?;
                prefix = prefix.combine(&l);
            }
        } else if (v + 1) % (2 * d) == d {
            let from_parent = recv_monoid!(comm, v + d - pad, DOWN, M)?;
            send_monoid!(comm, v + d - pad, DOWN, acc)?;
            prefix = from_parent;
        }
        d >>= 1;
    }
    Ok(prefix)
}

/// Inclusive scan of a block-distributed array: local totals, a scan over ranks, then a
/// local scan seeded with this rank's prefix.
pub fn scan_blocks<G: Group, M: Monoid>(comm: &Comm<G>, local: &[M], algo: Algo) -> dist_runtime::Result<Vec<M>> {
    let total = local.iter().fold(M::identity(), |acc, x| acc.combine(x));
    let mut acc = exclusive_scan(comm, &total, algo)?;
    Ok(local.iter().map(|x| { acc = acc.combine(x); acc.clone() }).collect())
}

/// The same, in one process.
pub fn serial_scan<M: Monoid>(all: &[M]) -> Vec<M> {
    let mut acc = M::identity();
    all.iter().map(|x| {
        acc = acc.combine(x);
        acc.clone()
    }).collect()
}
