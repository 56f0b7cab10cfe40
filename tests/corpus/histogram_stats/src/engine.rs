//! The distributed passes over the data, all rooted at one rank.

use crate::stats::Histogram;
use dist_runtime::prelude::*;

pub type CommResult<T> = dist_runtime::Result<T>;

pub struct Analysis {
    comm: Comm<World>,
    root: usize,
}

impl Analysis {
    pub fn new(comm: Comm<World>, root: usize) -> Result<Analysis, String> {
        if root >= comm.size() {
            return Err(format!("--root {root} is not a rank of a job of {} ranks", comm.size()));
        }
        Ok(Analysis { comm, root })
    }

    pub fn is_root(&self) -> bool {
        self.comm.rank() == self.root
    }

    pub fn root(&self) -> usize {
        self.root
    }

    /// The smallest and largest reading anywhere.
    pub fn global_range(&self, xs: &[f64]) -> CommResult<(f64, f64)> {
        let mut lo = [xs.iter().copied().fold(f64::INFINITY, f64::min)];
        let mut hi = [xs.iter().copied().fold(f64::NEG_INFINITY, f64::max)];
        self.comm.all_reduce(&mut lo, ReduceOp::Min)?;
        self.comm.all_reduce(&mut hi, ReduceOp::Max)?;
        Ok((lo[0], hi[0]))
    }

    /// The histogram of every rank's readings, on the root only.
    pub fn histogram(&self, xs: &[f64], lo: f64, hi: f64, bins: usize) -> CommResult<Option<Histogram>> {
        let mut h = Histogram::empty(lo, hi, bins);
        h.fill(xs);
        self.comm.reduce(&mut h.counts, ReduceOp::Sum, self.root)?;
        Ok(self.is_root().then_some(h))
    }

    /// The root decides the tail cut points and every rank learns them.
    pub fn share_cut(&self, hist: Option<&Histogram>, tail: f64) -> CommResult<[f64; 2]> {
        let mut cut = hist.map_or([0.0; 2], |h| h.tail_thresholds(tail));
        self.comm.broadcast(&mut cut, self.root)?;
        Ok(cut)
    }

    /// How many outliers each rank holds, known everywhere.
    pub fn outlier_counts(&self, mine: usize) -> CommResult<Vec<usize>> {
        let mut all = vec![0u64; self.comm.size()];
        self.comm.all_gather(&[mine as u64], &mut all)?;
        Ok(all.into_iter().map(|c| c as usize).collect())
    }

    /// Every rank's outliers, one rank after another, on the root.
    pub fn collect(&self, mine: &[f64], counts: &[usize]) -> CommResult<Option<Vec<f64>>> {
        if self.is_root() {
            let mut all = vec![0.0; counts.iter().sum()];
            self.comm.gather_v(mine, Some(&mut all[..]), counts, self.root)?;
            Ok(Some(all))
        } else {
            self.comm.gather_v(mine, None, counts, self.root)?;
            Ok(None)
        }
    }

    /// Hands each rank back the tail ranks of its own outliers (laid out as `collect`).
    pub fn hand_back(&self, ranks: Option<&[u64]>, counts: &[usize]) -> CommResult<Vec<u64>> {
        let mut mine = vec![0u64; counts[self.comm.rank()]];
        self.comm.scatter_v(ranks, &mut mine, counts, self.root)?;
        Ok(mine)
    }

    pub fn sum_at_root(&self, mut v: [f64; 3]) -> CommResult<[f64; 3]> {
        self.comm.reduce(&mut v, ReduceOp::Sum, self.root)?;
        Ok(v)
    }

    pub fn sum_everywhere(&self, mut v: [f64; 2]) -> CommResult<[f64; 2]> {
        self.comm.all_reduce(&mut v, ReduceOp::Sum)?;
        Ok(v)
    }

    /// The root's verdict, on every rank.
    pub fn agree(&self, ok_on_root: bool) -> CommResult<bool> {
        let mut flag = [u8::from(ok_on_root)];
        self.comm.broadcast(&mut flag, self.root)?;
        Ok(flag[0] == 1)
    }
}
