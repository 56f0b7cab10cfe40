//! The deterministic task tree and its serial reference.

use crate::config::Config;

/// One unit of work. Children are derived from the id, so the tree is the same
/// whichever rank executes a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Task { pub id: u64, pub depth: u32 }

/// splitmix64's finaliser.
pub fn mix(mut h: u64) -> u64 {
    h = h.wrapping_add(0x9E37_79B9_7F4A_7C15);
    h = (h ^ (h >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    h ^ (h >> 31)
}

impl Task {
    pub fn root(seed: u64, i: u64) -> Task {
        Task { id: mix(seed ^ mix(i)), depth: 0 }
    }

    /// How many children this task spawns: 0..=3, none at the deepest level.
    pub fn fanout(&self, max_depth: u32) -> usize {
        if self.depth >= max_depth { 0 } else { (mix(self.id ^ 0xF00D) % 4) as usize }
    }

    pub fn children(&self, max_depth: u32) -> impl Iterator<Item = Task> + '_ {
        (0..self.fanout(max_depth) as u64)
            .map(move |k| Task { id: mix(self.id.wrapping_add(k + 1)), depth: self.depth + 1 })
    }

    /// The task's "result": `work` rounds of mixing seeded by its id.
    pub fn execute(&self, work: u32) -> u64 {
        (0..work).fold(self.id, |h, i| mix(h ^ i as u64))
    }
}

/// What a run of the pool produced, reduced over ranks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary { pub executed: u64, pub checksum: u64 }

impl Summary {
    pub fn record(&mut self, value: u64) {
        self.executed += 1;
        // Wrapping sum: independent of the order (and the rank) tasks run in.
        self.checksum = self.checksum.wrapping_add(value);
    }
}

/// The whole tree, depth first, in one process.
pub fn serial_reference(cfg: &Config) -> Summary {
    let mut stack = cfg.initial_share(0, 1);
    let mut sum = Summary::default();
    while let Some(t) = stack.pop() {
        sum.record(t.execute(cfg.work));
        stack.extend(t.children(cfg.max_depth));
    }
    sum
}
