//! Digit extraction and the local, stable counting sort of one pass.

#[derive(Debug, Clone, Copy)]
pub struct Digit {
    pub shift: u32,
    pub bits: u32,
}

impl Digit {
    /// The digits of a pass schedule: `bits` at a time from the least significant.
    pub fn schedule(bits: u32) -> Vec<Digit> {
        (0..32u32.div_ceil(bits)).map(|p| Digit { shift: p * bits, bits: bits.min(32 - p * bits) }).collect()
    }

    pub fn radix(&self) -> usize {
        1usize << self.bits
    }

    pub fn of(&self, key: u32) -> usize {
        ((key >> self.shift) & ((1u32 << self.bits) - 1)) as usize
    }
}

/// Local histogram of one digit.
pub fn histogram(keys: &[u32], digit: Digit) -> Vec<u64> {
    let mut h = vec![0u64; digit.radix()];
    keys.iter().for_each(|&k| h[digit.of(k)] += 1);
    h
}

/// Stable counting sort of `keys` by `digit`, given its histogram.
pub fn sort_by_digit(keys: &[u32], digit: Digit, hist: &[u64]) -> Vec<u32> {
    let mut next: Vec<usize> = hist
        .iter()
        .scan(0usize, |acc, &c| {
            let s = *acc;
            *acc += c as usize;
            Some(s)
        })
        .collect();
    let mut out = vec![0u32; keys.len()];
    for &k in keys {
        let d = digit.of(k);
        out[next[d]] = k;
        next[d] += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_pass() {
        let d = Digit { shift: 0, bits: 4 };
        let keys = [0x13, 0x02, 0x23, 0x12];
        let h = histogram(&keys, d);
        assert_eq!(sort_by_digit(&keys, d, &h), vec![0x02, 0x12, 0x13, 0x23]);
    }
}
