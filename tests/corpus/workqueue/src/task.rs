//! The work: each task is independent and of uneven cost.

/// Collatz steps of `seed + id`, plus the largest value reached, folded into one number.
pub fn run(seed: u64, id: u64) -> f64 {
    let mut x = seed * 1_000 + id * 37 + 1;
    let (mut steps, mut peak) = (0u64, x);
    while x != 1 {
        x = if x % 2 == 0 { x / 2 } else { 3 * x + 1 };
        peak = peak.max(x);
        steps += 1;
    }
    steps as f64 + (peak % 1000) as f64 / 1000.0
}

/// Every task in order, in one process.
pub fn serial(seed: u64, tasks: u64) -> Vec<f64> {
    (0..tasks).map(|id| run(seed, id)).collect()
}
