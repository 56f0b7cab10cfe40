//! Segmented scans: the scan restarts wherever a flag is set. Done by lifting any monoid
//! into `Segmented<M>`, whose combine drops everything left of a segment start, so every
//! scan above works on segments unchanged.

use dist_runtime::prelude::*;

use crate::monoid::Monoid;
use crate::scan::{Algo, scan_blocks};

#[derive(Clone, Debug, PartialEq)]
pub struct Segmented<M> { pub starts: bool, pub value: M }

impl<M: Monoid> Monoid for Segmented<M> {
    const WORDS: usize = 1 + M::WORDS;
    fn identity() -> Self { Segmented { starts: false, value: M::identity() } }
    fn combine(&self, rhs: &Self) -> Self {
        if rhs.starts {
            rhs.clone()
        } else {
            Segmented { starts: self.starts, value: self.value.combine(&rhs.value) }
        }
    }
    fn to_words(&self) -> Vec<u64> {
        let mut w = vec![self.starts as u64];
        w.extend(self.value.to_words());
        w
    }
    fn from_words(w: &[u64]) -> Self { Segmented { starts: w[0] != 0, value: M::from_words(&w[1..]) } }
}

/// Inclusive segmented scan of a block-distributed array; `starts[i]` opens a segment.
pub fn segmented_scan<G: Group, M: Monoid>(
    comm: &Comm<G>,
    values: &[M],
    starts: &[bool],
    algo: Algo,
) -> dist_runtime::Result<Vec<M>> {
    let lifted: Vec<Segmented<M>> =
        values.iter().zip(starts).map(|(v, &s)| Segmented { starts: s, value: v.clone() }).collect();
    Ok(scan_blocks(comm, &lifted, algo)?.into_iter().map(|s| s.value).collect())
}

/// The same, in one process.
pub fn serial_segmented<M: Monoid>(values: &[M], starts: &[bool]) -> Vec<M> {
    let mut acc = M::identity();
    let mut step = |(v, &s): (&M, &bool)| {
        acc = if s { v.clone() } else { acc.combine(v) };
        acc.clone()
    };
    values.iter().zip(starts).map(&mut step).collect()
}
