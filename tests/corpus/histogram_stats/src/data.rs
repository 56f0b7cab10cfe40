//! A synthetic sensor dataset: mostly Gaussian readings with a heavy-tailed fraction.

pub struct Lcg(u64);

impl Lcg {
    pub fn new(seed: u64) -> Lcg {
        Lcg(seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407))
    }
    pub fn unit(&mut self) -> f64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    /// Box-Muller, one value per call.
    pub fn gaussian(&mut self) -> f64 {
        let (u, v) = (self.unit(), self.unit());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// How many readings rank `rank` holds: not the same everywhere.
pub fn count_for(rank: usize, per_rank: usize) -> usize {
    per_rank + (rank * 37) % 11
}

/// Rank `rank`'s readings.
pub fn readings(rank: usize, per_rank: usize, seed: u64) -> Vec<f64> {
    let mut g = Lcg::new(seed ^ ((rank as u64 + 1) << 32));
    (0..count_for(rank, per_rank))
        .map(|_| {
            let base = 20.0 + 2.5 * g.gaussian();
            if g.unit() < 0.04 {
                // A glitch: a Cauchy-like spike.
                base + 3.0 * (std::f64::consts::PI * (g.unit() - 0.5)).tan()
            } else {
                base
            }
        })
        .collect()
}
