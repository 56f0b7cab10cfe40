//! A hand-written sum all-reduce over any communicator: recursive halving
//! (reduce-scatter) on the way down, recursive doubling (all-gather) on the way up,
//! partners `v ^ mask`. Sizes that are not a power of two fold their extra ranks into
//! a neighbour first and get the result back at the end.

use crate::cli::Algo;
use dist_runtime::prelude::*;

const FOLD: Tag<f64> = Tag::new(10);
const HALVE: Tag<f64> = Tag::new(11);
const DOUBLE: Tag<f64> = Tag::new(12);
const UNFOLD: Tag<f64> = Tag::new(13);

/// Where the power-of-two core sits inside a communicator of `n` ranks.
#[derive(Debug, Clone, Copy)]
struct Core {
    pof2: usize,
    /// Ranks beyond the power of two; ranks 0..2*rem pair up, the even one folding.
    rem: usize,
}

impl Core {
    fn of(n: usize) -> Core {
        let pof2 = if n.is_power_of_two() { n } else { n.next_power_of_two() / 2 };
        Core { pof2, rem: n - pof2 }
    }

    /// The virtual rank of a real rank, or `None` when it folded away.
    fn virtual_rank(&self, r: usize) -> Option<usize> {
        if r < 2 * self.rem {
            if r % 2 == 1 { Some(r / 2) } else { None }
        } else {
            Some(r - self.rem)
        }
    }

    /// The real rank behind virtual rank `v`.
    fn real(&self, v: usize) -> usize {
        if v < self.rem { 2 * v + 1 } else { v + self.rem }
    }
}

fn add_into(acc: &mut [f64], x: &[f64]) {
    acc.iter_mut().zip(x).for_each(|(a, b)| *a += b);
}

/// Sums `buf` over every rank of `comm`, leaving the total on all of them.
pub fn all_reduce_sum<G: Group>(comm: &Comm<G>, buf: &mut [f64], algo: Algo) -> dist_runtime::Result<()> {
    let (r, n) = (comm.rank(), comm.size());
    if n == 1 {
        return Ok(());
    }
    let core = Core::of(n);
    // Fold: the even rank of each extra pair hands its vector to the odd one.
    if r < 2 * core.rem {
        if r % 2 == 0 {
            comm.send(r + 1, FOLD, &*buf)?;
        } else {
            let mut other = vec![0.0; buf.len()];
            comm.recv(r - 1, FOLD, &mut other)?;
            add_into(buf, &other);
        }
    }
    if let Some(v) = core.virtual_rank(r) {
        match algo {
            Algo::Rabenseifner => halve_then_double(comm, 0, v, core, buf)?,
            Algo::Doubling => doubling(comm, 0, v, core, buf)?,
        }
    }
    // Unfold: the folded ranks get the total back.
    if r < 2 * core.rem {
        if r % 2 == 0 {
            comm.recv(r + 1, UNFOLD, buf)?;
        } else {
            comm.send(r - 1, UNFOLD, &*buf)?;
        }
    }
    Ok(())
}

/// One level of recursive halving: swap halves of `seg` with the partner `v ^ mask`,
/// keep the half this rank is responsible for, recurse on it, then swap the finished
/// halves back (recursive doubling) on the way out.
fn halve_then_double<G: Group>(
    comm: &Comm<G>,
    level: u32,
    v: usize,
    core: Core,
    seg: &mut [f64],
) -> dist_runtime::Result<()> {
    let mask = 1usize << level;
    if mask >= core.pof2 {
        return Ok(());
    }
    let peer = core.real(v ^ mask);
    let mid = seg.len() / 2;
    let keep_low = v & mask == 0;
    let (low, high) = seg.split_at_mut(mid);
    let (keep, give) = if keep_low { (low, high) } else { (high, low) };
    let mut theirs = vec![0.0; keep.len()];
    comm.sendrecv(peer, HALVE, &*give, peer, &mut theirs)?;
    // Sum in a fixed order (lower virtual rank first) so every rank agrees bitwise.
    if keep_low {
        add_into(keep, &theirs);
    } else {
        keep.iter_mut().zip(&theirs).for_each(|(a, b)| *a = b + *a);
    }
    halve_then_double(comm, level + 1, v, core, keep)?;
    comm.sendrecv(peer, DOUBLE, &*keep, peer, give)?;
    Ok(())
}

/// Plain recursive doubling: the whole vector goes to the partner at every level.
fn doubling<G: Group>(comm: &Comm<G>, level: u32, v: usize, core: Core, buf: &mut [f64]) -> dist_runtime::Result<()> {
    let mask = 1usize << level;
    if mask >= core.pof2 {
        return Ok(());
    }
    let peer = core.real(v ^ mask);
    let mut theirs = vec![0.0; buf.len()];
    comm.sendrecv(peer, DOUBLE, &*buf, peer, &mut theirs)?;
    add_into(buf, &theirs);
    doubling(comm, level + 1, v, core, buf)
}

#[cfg(test)]
mod tests {
    use super::Core;

    #[test]
    fn virtual_ranks_cover_the_core() {
        for n in 1..=17 {
            let c = Core::of(n);
            let vs: Vec<usize> = (0..n).filter_map(|r| c.virtual_rank(r)).collect();
            assert_eq!(vs, (0..c.pof2).collect::<Vec<_>>(), "n = {n}");
            for v in 0..c.pof2 {
                assert_eq!(c.virtual_rank(c.real(v)), Some(v));
            }
        }
    }
}
