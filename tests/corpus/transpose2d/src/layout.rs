//! Block distribution of `total` items over `parts` owners, the first
//! `total % parts` owners taking one extra item.

#[derive(Clone, Debug)]
pub struct BlockLayout {
    pub total: usize,
    pub counts: Vec<usize>,
    pub starts: Vec<usize>,
}

impl BlockLayout {
    pub fn new(total: usize, parts: usize) -> Self {
        let counts: Vec<usize> = (0..parts).map(|k| total / parts + usize::from(k < total % parts)).collect();
        let starts = counts
            .iter()
            .scan(0usize, |acc, &c| {
                let s = *acc;
                *acc += c;
                Some(s)
            })
            .collect();
        BlockLayout { total, counts, starts }
    }

    pub fn count(&self, k: usize) -> usize {
        self.counts[k]
    }

    pub fn range(&self, k: usize) -> std::ops::Range<usize> {
        self.starts[k]..self.starts[k] + self.counts[k]
    }

    pub fn max_count(&self) -> usize {
        self.counts.iter().copied().max().unwrap_or(0)
    }

    /// `counts` scaled by `width` (elements per item), e.g. rows -> matrix entries.
    pub fn scaled(&self, width: usize) -> Vec<usize> {
        self.counts.iter().map(|c| c * width).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uneven_blocks_cover_everything() {
        let l = BlockLayout::new(10, 4);
        assert_eq!(l.counts, [3, 3, 2, 2]);
        assert_eq!(l.range(2), 6..8);
        assert_eq!(l.scaled(5).iter().sum::<usize>(), 50);
    }
}
