//! A tiny deterministic xorshift64* generator: every stream is derived from the master
//! seed and a stream id, so the serial reference can replay any rank's draws.

#[derive(Debug, Clone)]
pub struct XorShift64 {
    state: u64,
}

/// splitmix64 finaliser, used to decorrelate stream seeds.
pub fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl XorShift64 {
    pub fn new(seed: u64) -> Self {
        let s = mix(seed);
        XorShift64 { state: if s == 0 { 0x2545_f491_4f6c_dd1d } else { s } }
    }

    /// Stream `stream` of master seed `seed`.
    pub fn stream(seed: u64, stream: u64) -> Self {
        XorShift64::new(seed ^ mix(stream.wrapping_mul(0xa076_1d64_78bd_642f)))
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.state = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_differ_and_replay() {
        let mut a = XorShift64::stream(7, 0);
        let mut b = XorShift64::stream(7, 1);
        let mut a2 = XorShift64::stream(7, 0);
        let xs: Vec<u64> = (0..4).map(|_| a.next_u64()).collect();
        assert_ne!(xs, (0..4).map(|_| b.next_u64()).collect::<Vec<_>>());
        assert_eq!(xs, (0..4).map(|_| a2.next_u64()).collect::<Vec<_>>());
        assert!((0..1000).map(|_| a.next_f64()).all(|u| (0.0..1.0).contains(&u)));
    }
}
