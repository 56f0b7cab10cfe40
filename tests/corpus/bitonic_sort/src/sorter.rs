//! Parallel sorts by pairwise merge-split exchanges.

use dist_runtime::prelude::*;

use crate::keys::merge;

const KEYS: Tag<i64> = Tag::new(10);
/// Keys past the real ones when blocks are padded to one length.
pub const PAD: i64 = i64::MAX;

pub struct Sorter {
    comm: Comm<World>,
    /// How many keys each rank holds (what a partner will send).
    counts: Vec<usize>,
    pub keys: Vec<i64>,
}

impl Sorter {
    pub fn new(comm: Comm<World>, counts: Vec<usize>, mut keys: Vec<i64>) -> Sorter {
        keys.sort_unstable();
        Sorter { comm, counts, keys }
    }

    /// Swaps blocks with `partner` (who holds `their_len` keys); keeps the lower or upper
    /// part of the merge, as many keys as this rank held before.
    fn merge_split(&mut self, partner: usize, their_len: usize, keep_low: bool) -> dist_runtime::Result<()> {
        let mut theirs = vec![0i64; their_len];
        self.comm.sendrecv(partner, KEYS, &self.keys, partner, &mut theirs)?;
        let merged = merge(&self.keys, &theirs);
        let mine = self.keys.len();
        self.keys = if keep_low { merged[..mine].to_vec() } else { merged[merged.len() - mine..].to_vec() };
        Ok(())
    }

    /// Odd-even transposition: p phases of neighbour exchanges, any world size.
    pub fn odd_even(&mut self) -> dist_runtime::Result<()> {
        let (r, p) = (self.comm.rank(), self.comm.size());
        for phase in 0..p {
            let partner = if (phase + r) % 2 == 0 { r + 1 } else { r.wrapping_sub(1) };
            if partner >= p {
                continue;
            }
            self.merge_split(partner, self.counts[partner], r < partner)?;
        }
        Ok(())
    }

    /// Bitonic merge-split over ranks: every block padded to the longest with `PAD`, then
    /// log p · (log p + 1) / 2 exchanges with partner = rank ^ mask. Power-of-two sizes.
    pub fn bitonic(&mut self) -> dist_runtime::Result<()> {
        let (r, p) = (self.comm.rank(), self.comm.size());
        assert!(p.is_power_of_two(), "bitonic needs a power-of-two world");
        let longest = self.counts.iter().copied().max().unwrap_or(0);
        self.keys.resize(longest, PAD);
        self.counts = vec![longest; p];
        let stages = p.trailing_zeros();
        for k in 1..=stages {
            let ascending = (r >> k) & 1 == 0;
            for j in (0..k).rev() {
                let partner = r ^ (1 << j);
                // Every block is padded to the same length here.
                self.merge_split(partner, longest, (r < partner) == ascending)?;
            }
        }
        self.keys.retain(|&x| x != PAD);
        Ok(())
    }
}
