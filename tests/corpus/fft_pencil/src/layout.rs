//! Block distribution of `n` items over `parts` ranks: rank r owns
//! `[n·r/parts, n·(r+1)/parts)`, so the blocks differ by at most one item.

use std::ops::Range;

#[derive(Debug, Clone, Copy)]
pub struct BlockDist {
    pub n: usize,
    pub parts: usize,
}

impl BlockDist {
    pub fn new(n: usize, parts: usize) -> Self {
        BlockDist { n, parts }
    }

    pub fn range(&self, r: usize) -> Range<usize> {
        (self.n * r / self.parts)..(self.n * (r + 1) / self.parts)
    }

    pub fn len(&self, r: usize) -> usize {
        self.range(r).len()
    }

    /// The rank that owns item `i`.
    pub fn owner(&self, i: usize) -> usize {
        (0..self.parts).find(|&r| self.range(r).contains(&i)).expect("item in range")
    }

    /// `k × len(r)` for every rank r: the element counts of one block per rank.
    pub fn counts_times(&self, k: usize) -> Vec<usize> {
        (0..self.parts).map(|r| k * self.len(r)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_cover_everything_once() {
        for n in 0..20 {
            for p in 1..6 {
                let d = BlockDist::new(n, p);
                let total: usize = (0..p).map(|r| d.len(r)).sum();
                assert_eq!(total, n);
                for i in 0..n {
                    assert!(d.range(d.owner(i)).contains(&i));
                }
            }
        }
    }
}
