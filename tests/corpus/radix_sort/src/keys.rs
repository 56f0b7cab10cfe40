//! Deterministic key generation and the block layout of keys over ranks.

pub struct XorShift32x2 {
    s: u64,
}

impl XorShift32x2 {
    pub fn new(seed: u64) -> Self {
        let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        XorShift32x2 { s: (z ^ (z >> 31)) | 1 }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.s ^= self.s << 13;
        self.s ^= self.s >> 7;
        self.s ^= self.s << 17;
        self.s
    }

    pub fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }
}

/// The keys that rank `rank` starts with.
pub fn generate(seed: u64, rank: usize, count: usize, mask: u32) -> Vec<u32> {
    let mut rng = XorShift32x2::new(seed ^ ((rank as u64 + 1) << 40));
    (0..count)
        .map(|i| {
            let k = rng.next_u32() & mask;
            // A few duplicates and small keys, as real data has.
            if i % 17 == 0 {
                k & 0xff
            } else {
                k
            }
        })
        .collect()
}

/// Which global positions each rank owns: `displs[r]..displs[r] + counts[r]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    pub counts: Vec<usize>,
    pub displs: Vec<usize>,
}

impl Layout {
    pub fn from_counts(counts: Vec<usize>) -> Layout {
        let displs = counts
            .iter()
            .scan(0usize, |acc, &c| {
                let d = *acc;
                *acc += c;
                Some(d)
            })
            .collect();
        Layout { counts, displs }
    }

    pub fn total(&self) -> usize {
        self.counts.iter().sum()
    }

    /// The rank that owns global position `pos`.
    pub fn owner(&self, pos: usize) -> usize {
        self.displs.partition_point(|&d| d <= pos) - 1
    }

    pub fn range(&self, rank: usize) -> std::ops::Range<usize> {
        self.displs[rank]..self.displs[rank] + self.counts[rank]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners() {
        let l = Layout::from_counts(vec![3, 0, 2]);
        assert_eq!(l.displs, vec![0, 3, 3]);
        assert_eq!((0..5).map(|p| l.owner(p)).collect::<Vec<_>>(), vec![0, 0, 0, 2, 2]);
    }
}
