//! A vector of global length `n` split into contiguous blocks, one per rank.

use dist_runtime::prelude::*;

/// Which rows of an `n`-row problem each rank owns; the first `n % size` ranks own
/// one row more than the others.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    pub n: usize,
    pub rank: usize,
    pub size: usize,
    pub start: usize,
    pub end: usize,
}

impl Layout {
    pub fn new(n: usize, rank: usize, size: usize) -> Layout {
        assert!(n >= size, "{n} rows cannot be spread over {size} ranks");
        let (start, end) = Self::bounds(n, size, rank);
        Layout { n, rank, size, start, end }
    }

    fn bounds(n: usize, size: usize, r: usize) -> (usize, usize) {
        let (q, rem) = (n / size, n % size);
        let start = r * q + r.min(rem);
        (start, start + q + usize::from(r < rem))
    }

    pub fn local_len(&self) -> usize {
        self.end - self.start
    }

    /// Rows per rank, for the variable-count gathers.
    pub fn counts(&self) -> Vec<usize> {
        (0..self.size).map(|r| {
            let (s, e) = Self::bounds(self.n, self.size, r);
            e - s
        }).collect()
    }
}

#[derive(Clone)]
pub struct DistVector {
    comm: Comm<World>,
    pub layout: Layout,
    pub local: Vec<f64>,
}

impl DistVector {
    pub fn zeros(comm: &Comm<World>, layout: &Layout) -> DistVector {
        DistVector { comm: comm.clone(), layout: layout.clone(), local: vec![0.0; layout.local_len()] }
    }

    /// Entry `i` is `f(i)` for the global index `i`.
    pub fn from_fn(comm: &Comm<World>, layout: &Layout, f: impl Fn(usize) -> f64) -> DistVector {
        let local = (layout.start..layout.end).map(f).collect();
        DistVector { comm: comm.clone(), layout: layout.clone(), local }
    }

    pub fn dot(&self, other: &DistVector) -> dist_runtime::Result<f64> {
        debug_assert_eq!(self.layout, other.layout);
        let mut s = [self.local.iter().zip(&other.local).map(|(a, b)| a * b).sum::<f64>()];
        self.comm.all_reduce(&mut s, ReduceOp::Sum)?;
        Ok(s[0])
    }

    pub fn norm(&self) -> dist_runtime::Result<f64> {
        Ok(self.dot(self)?.sqrt())
    }

    /// self += a · x
    pub fn axpy(&mut self, a: f64, x: &DistVector) {
        self.local.iter_mut().zip(&x.local).for_each(|(s, xi)| *s += a * xi);
    }

    /// self = x + b · self
    pub fn xpby(&mut self, x: &DistVector, b: f64) {
        self.local.iter_mut().zip(&x.local).for_each(|(s, xi)| *s = xi + b * *s);
    }

    /// The whole vector, on every rank.
    pub fn gather(&self) -> dist_runtime::Result<Vec<f64>> {
        let mut all = vec![0.0; self.layout.n];
        self.comm.all_gather_v(&self.local, &mut all, &self.layout.counts())?;
        Ok(all)
    }
}
