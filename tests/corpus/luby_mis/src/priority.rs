//! Luby's random priorities: a hash of (seed, round, vertex), so any process can
//! recompute the priority a vertex drew in any round.

use crate::graph::hash;

/// The priority of a vertex still competing; 0 marks one that no longer competes.
pub fn draw(seed: u64, round: usize, v: usize) -> u64 {
    (hash(seed ^ 0x1ba5_c0de, round as u64, v as u64) >> 1) + 1
}

/// Whether `(pa, a)` beats `(pb, b)`: the higher priority wins, ties by vertex id.
pub fn beats(pa: u64, a: usize, pb: u64, b: usize) -> bool {
    (pa, a) > (pb, b)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Undecided,
    InSet,
    Excluded,
}
