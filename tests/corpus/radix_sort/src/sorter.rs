//! The distributed LSD radix sort: one stable pass per digit, keys moved to the rank
//! that owns their global position after the pass.

use dist_runtime::prelude::*;

use crate::digits::{histogram, sort_by_digit, Digit};
use crate::error::{Result, SortError};
use crate::keys::Layout;

#[derive(Debug, Default, Clone)]
pub struct PassStats {
    pub sent_away: usize,
    pub received: usize,
}

pub struct RadixSorter {
    world: Comm<World>,
    layout: Layout,
    keys: Vec<u32>,
    pub history: Vec<PassStats>,
}

impl RadixSorter {
    /// Collective: learns every rank's key count, which is also the layout after the sort.
    pub fn new(world: Comm<World>, keys: Vec<u32>) -> Result<RadixSorter> {
        let mut counts = vec![0u64; world.size()];
        world.all_gather(&[keys.len() as u64], &mut counts)?;
        let layout = Layout::from_counts(counts.into_iter().map(|c| c as usize).collect());
        Ok(RadixSorter { world, layout, keys, history: Vec::new() })
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    pub fn keys(&self) -> &[u32] {
        &self.keys
    }

    /// Global position of every key of `sorted` (this rank's keys, stably sorted by
    /// the digit), from the global digit totals and the counts on lower ranks.
    fn positions(&self, sorted: &[u32], digit: Digit, global: &[u64], below: &[u64]) -> Vec<u64> {
        let mut next: Vec<u64> = global
            .iter()
            .scan(0u64, |acc, &g| {
                let start = *acc;
                *acc += g;
                Some(start)
            })
            .zip(below)
            .map(|(start, b)| start + b)
            .collect();
        sorted
            .iter()
            .map(|&k| {
                let d = digit.of(k);
                let p = next[d];
                next[d] += 1;
                p
            })
            .collect()
    }

    /// One pass over `digit`.
    pub fn pass(&mut self, digit: Digit) -> Result<()> {
        let n = self.world.size();
        let me = self.world.rank();
        let hist = histogram(&self.keys, digit);

        let mut global = hist.clone();
        self.world.all_reduce(&mut global, ReduceOp::Sum)?;
        let mut below = hist.clone();
        self.world.exscan(&mut below, ReduceOp::Sum)?;

        let sorted = sort_by_digit(&self.keys, digit, &hist);
        let positions = self.positions(&sorted, digit, &global, &below);

        // Positions rise along `sorted`, so each destination's keys are one run.
        let mut send_counts = vec![0u64; n];
        positions.iter().for_each(|&p| send_counts[self.layout.owner(p as usize)] += 1);
        let mut recv_counts = vec![0u64; n];
        self.world.all_to_all(&send_counts, &mut recv_counts)?;

        let sc: Vec<usize> = send_counts.iter().map(|&c| c as usize).collect();
        let rc: Vec<usize> = recv_counts.iter().map(|&c| c as usize).collect();
        let incoming: usize = rc.iter().sum();
        let mut recv_keys = vec![0u32; incoming];
        let mut recv_pos = vec![0u64; incoming];
        self.world.all_to_all_v(&sorted, &sc, &mut recv_keys, &rc)?;
        self.world.all_to_all_v(&positions, &sc, &mut recv_pos, &rc)?;

        let mine = self.layout.range(me);
        let mut placed = vec![false; mine.len()];
        let mut next_keys = vec![0u32; mine.len()];
        for (&k, &p) in recv_keys.iter().zip(&recv_pos) {
            let p = p as usize;
            if !mine.contains(&p) || placed[p - mine.start] {
                return Err(SortError::Placement(format!(
                    "rank {me} got key {k:#x} for position {p}, outside {mine:?} or twice"
                )));
            }
            placed[p - mine.start] = true;
            next_keys[p - mine.start] = k;
        }
        self.history.push(PassStats { sent_away: sorted.len() - sc[me], received: incoming - rc[me] });
        self.keys = next_keys;
        Ok(())
    }

    /// Sorts over every rank. Digits above the highest set bit of every key are zero
    /// everywhere and are skipped. Returns the number of passes made.
    pub fn sort(&mut self, bits_per_pass: u32) -> Result<usize> {
        let mut max = [self.keys.iter().copied().max().unwrap_or(0)];
        self.world.all_reduce(&mut max, ReduceOp::Max)?;
        let significant = (32 - max[0].leading_zeros()).max(1);
        let mut passes = 0;
        for digit in Digit::schedule(bits_per_pass) {
            if digit.shift >= significant {
                break;
            }
            self.pass(digit)?;
            passes += 1;
        }
        Ok(passes)
    }
}
