//! Recursive coordinate bisection over communicators: at each level the ranks agree on
//! the axis (the longer side of the global bounding box), find the cut by a bisection
//! search on global counts, trade points with the other half, and split in two.

use crate::geom::{self, Axis, Cut, Point};
use dist_runtime::prelude::*;

dist_runtime::group!(pub(crate) Half);

const COUNT: Tag<u64> = Tag::new(20);
const POINTS: Tag<f64> = Tag::new(21);

/// Who a rank trades with when its communicator of `n` splits into `n / 2` lower and
/// `n - n / 2` upper ranks. Lower rank `r` gives its upper points to upper rank
/// `n_lo + r`; upper rank `u` gives its lower points to lower rank `(u - n_lo) % n_lo`.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub lower: bool,
    pub send_to: usize,
    pub recv_from: Vec<usize>,
}

impl Plan {
    pub fn new(rank: usize, n: usize) -> Plan {
        let n_lo = n / 2;
        if rank < n_lo {
            let recv_from = (n_lo..n).filter(|u| (u - n_lo) % n_lo == rank).collect();
            Plan { lower: true, send_to: n_lo + rank, recv_from }
        } else {
            let recv_from = if rank - n_lo < n_lo { vec![rank - n_lo] } else { Vec::new() };
            Plan { lower: false, send_to: (rank - n_lo) % n_lo, recv_from }
        }
    }
}

/// One rank's share of the partitioning job.
pub struct Bisector {
    pub max_iters: usize,
    /// The cuts this rank took part in, outermost first.
    pub cuts: Vec<Cut>,
}

impl Bisector {
    pub fn new(max_iters: usize) -> Bisector {
        Bisector { max_iters, cuts: Vec::new() }
    }

    /// Partitions the points held by the ranks of `comm`; returns this rank's part.
    /// `first` is the world rank of `comm`'s rank 0 (the parts are numbered by world rank).
    pub fn run<G: Group>(
        &mut self,
        comm: &Comm<G>,
        first: usize,
        depth: usize,
        points: Vec<Point>,
    ) -> dist_runtime::Result<Vec<Point>> {
        let n = comm.size();
        if n == 1 {
            return Ok(points);
        }
        let (axis, lo, hi) = global_axis(comm, &points)?;
        let n_lo = n / 2;
        let mut total = [points.len() as u64];
        comm.all_reduce(&mut total, ReduceOp::Sum)?;
        let target = geom::target_below(total[0], n_lo, n);
        let at = geom::bisect_cut(lo, hi, target, self.max_iters, |m| {
            let mut c = [points.iter().filter(|p| p.coord(axis) < m).count() as u64];
            comm.all_reduce(&mut c, ReduceOp::Sum)?;
            Ok::<u64, dist_runtime::Error>(c[0])
        })?;
        self.cuts.push(Cut { depth, first_rank: first, ranks: n, axis, at });

        let plan = Plan::new(comm.rank(), n);
        let (below, above): (Vec<Point>, Vec<Point>) = points.into_iter().partition(|p| p.coord(axis) < at);
        let (mut keep, give) = if plan.lower { (below, above) } else { (above, below) };
        keep.extend(trade(comm, &plan, &give)?);

        let color = u32::from(!plan.lower);
        let half = comm.split::<Half>(color, comm.rank() as i64)?;
        let sub_first = if plan.lower { first } else { first + n_lo };
        self.run(&half, sub_first, depth + 1, keep)
    }
}

/// The axis to cut and its global extent, from an all-reduce of the local boxes.
fn global_axis<G: Group>(comm: &Comm<G>, points: &[Point]) -> dist_runtime::Result<(Axis, f64, f64)> {
    let (lo, hi) = geom::bbox(points);
    let mut lo = lo;
    let mut hi = hi;
    comm.all_reduce(&mut lo, ReduceOp::Min)?;
    comm.all_reduce(&mut hi, ReduceOp::Max)?;
    let axis = geom::pick_axis(lo, hi);
    let a = axis as usize;
    Ok((axis, lo[a], hi[a]))
}

/// Sends `give` to the plan's partner and collects what the partners send here:
/// counts first, then the packed points.
fn trade<G: Group>(comm: &Comm<G>, plan: &Plan, give: &[Point]) -> dist_runtime::Result<Vec<Point>> {
    let mut counts = vec![[0u64; 1]; plan.recv_from.len()];
    let mine = [give.len() as u64];
    {
        let mut reqs = Vec::with_capacity(plan.recv_from.len() + 1);
        for (&src, slot) in plan.recv_from.iter().zip(counts.iter_mut()) {
            reqs.push(comm.irecv(src, COUNT, slot)?);
        }
        reqs.push(comm.isend(plan.send_to, COUNT, &mine)?);
        dist_runtime::wait_all(reqs)?;
    }

    let mut packed = Vec::with_capacity(3 * give.len());
    give.iter().for_each(|p| p.pack(&mut packed));
    let mut inbox: Vec<Vec<f64>> = counts.iter().map(|c| vec![0.0; 3 * c[0] as usize]).collect();
    {
        let mut reqs = Vec::with_capacity(inbox.len() + 1);
        for (&src, buf) in plan.recv_from.iter().zip(inbox.iter_mut()) {
            reqs.push(comm.irecv(src, POINTS, buf)?);
        }
        reqs.push(comm.isend(plan.send_to, POINTS, &packed)?);
        dist_runtime::wait_all(reqs)?;
    }
    Ok(inbox.iter().flat_map(|raw| Point::unpack(raw)).collect())
}

#[cfg(test)]
mod tests {
    use super::Plan;

    #[test]
    fn every_send_has_a_receiver() {
        for n in 2..=9 {
            for r in 0..n {
                let p = Plan::new(r, n);
                assert!(Plan::new(p.send_to, n).recv_from.contains(&r), "n = {n}, r = {r}");
            }
        }
    }
}
