//! Synthetic text: word ids drawn with a skew, their spelling, and the owner hash.

use crate::config::Config;

pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.0)
    }
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

const SYLLABLES: [&str; 8] = ["ka", "lo", "mi", "ne", "ru", "sa", "to", "vi"];

/// The spelling of word `id`: its base-8 digits as syllables.
pub fn spell(id: u64) -> String {
    let mut s = String::new();
    let mut x = id;
    loop {
        s.push_str(SYLLABLES[(x % 8) as usize]);
        x /= 8;
        if x == 0 {
            break s;
        }
    }
}

/// The words rank `rank` reads: ids seeded by the rank.
pub fn generate(cfg: &Config, rank: usize) -> Vec<u64> {
    let mut g = Rng::new(cfg.seed.wrapping_mul(1_000_003).wrapping_add(rank as u64));
    (0..cfg.records_on(rank)).map(|_| ((cfg.vocab as f64) * g.unit().powf(cfg.skew)) as u64).collect()
}

/// Which rank counts word `key`.
pub fn owner_of(key: u64, n: usize) -> usize {
    (mix(key ^ 0x5151_5151) % n as u64) as usize
}
