//! Sample sort: sort locally, agree on splitters from regular samples of every rank,
//! send each bucket to its rank (counts first, then the keys), merge what arrives.

use dist_runtime::prelude::*;

use crate::merge::{bucket_bounds, merge_runs, pick_splitters, regular_samples, split_runs};

pub struct SampleSorter {
    comm: Comm<World>,
    oversample: usize,
    pub keys: Vec<u64>,
    pub splitters: Vec<u64>,
    /// Keys this rank sent to other ranks.
    pub moved: usize,
}

impl SampleSorter {
    pub fn new(comm: &Comm<World>, keys: Vec<u64>, oversample: usize) -> Self {
        SampleSorter { comm: comm.clone(), oversample, keys, splitters: Vec::new(), moved: 0 }
    }

    pub fn sort(&mut self) -> dist_runtime::Result<()> {
        self.keys.sort_unstable();
        self.splitters = self.choose_splitters()?;
        let bounds = bucket_bounds(&self.keys, &self.splitters);
        let runs = self.exchange(&bounds)?;
        self.keys = merge_runs(&runs);
        Ok(())
    }

    fn choose_splitters(&self) -> dist_runtime::Result<Vec<u64>> {
        let n = self.comm.size();
        let per = self.oversample;
        let samples = regular_samples(&self.keys, per);
        let mut all = vec![0u64; per * n];
        self.comm.all_gather(&samples, &mut all)?;
        Ok(pick_splitters(&mut all, n))
    }

    /// Sends `keys[bounds[j]..bounds[j + 1]]` to rank j; returns the runs received,
    /// one per source rank, each sorted.
    fn exchange(&mut self, bounds: &[usize]) -> dist_runtime::Result<Vec<Vec<u64>>> {
        let (me, n) = (self.comm.rank(), self.comm.size());
        let send_counts: Vec<u64> = bounds.windows(2).map(|w| (w[1] - w[0]) as u64).collect();
        let mut recv_counts = vec![0u64; n];
        self.comm.all_to_all(&send_counts, &mut recv_counts)?;

        let sc: Vec<usize> = send_counts.iter().map(|&c| c as usize).collect();
        let rc: Vec<usize> = recv_counts.iter().map(|&c| c as usize).collect();
        let mut recv = vec![0u64; rc.iter().sum()];
        self.comm.all_to_all_v(&self.keys, &sc, &mut recv, &rc)?;
        self.moved += sc.iter().enumerate().filter(|&(j, _)| j != me).map(|(_, &c)| c).sum::<usize>();
        Ok(split_runs(&recv, &rc))
    }

    /// The largest number of keys any rank holds.
    pub fn max_load(&self) -> dist_runtime::Result<u64> {
        let mut most = [self.keys.len() as u64];
        self.comm.all_reduce(&mut most, ReduceOp::Max)?;
        Ok(most[0])
    }
}
