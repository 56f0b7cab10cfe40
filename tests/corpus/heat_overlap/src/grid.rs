//! The rod's decomposition over ranks and the initial condition rank 0 loads.

/// Block decomposition: rank r owns `offsets[r]..offsets[r] + counts[r]`; the first
/// `points % ranks` ranks get one point more.
#[derive(Debug, Clone)]
pub struct Decomposition {
    pub counts: Vec<usize>,
    pub offsets: Vec<usize>,
}

impl Decomposition {
    pub fn new(points: usize, ranks: usize) -> Self {
        let (base, extra) = (points / ranks, points % ranks);
        let counts: Vec<usize> = (0..ranks).map(|r| base + usize::from(r < extra)).collect();
        let offsets = counts
            .iter()
            .scan(0, |acc, &c| {
                let o = *acc;
                *acc += c;
                Some(o)
            })
            .collect();
        Decomposition { counts, offsets }
    }

    pub fn total(&self) -> usize {
        self.counts.iter().sum()
    }
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
    z = (z ^ (z >> 33)).wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    z ^ (z >> 33)
}

/// Stands in for reading the initial temperature profile from a file: a few smooth
/// modes plus seeded noise. Only rank 0 calls it.
pub fn load_initial_profile(points: usize, seed: u64) -> Vec<f64> {
    let mut state = mix(seed) | 1;
    (0..points)
        .map(|i| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let x = (i as f64 + 0.5) / points as f64;
            let noise = (state >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
            0.5 + 0.3 * (std::f64::consts::PI * x).sin() + 0.15 * (7.0 * x).cos() + 0.05 * noise
        })
        .collect()
}
