//! Every rank's input and the serial answers.

use crate::tree::Op;

/// What rank `r` contributes for a test of length `len` (deterministic, signed).
pub fn contribution(r: usize, len: usize, salt: u64) -> Vec<i64> {
    (0..len)
        .map(|i| {
            let h = (r as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (i as u64).wrapping_mul(31) ^ salt;
            (h % 2001) as i64 - 1000
        })
        .collect()
}

pub fn reduced(n: usize, len: usize, salt: u64, op: Op) -> Vec<i64> {
    let mut acc = contribution(0, len, salt);
    for r in 1..n {
        op.apply(&mut acc, &contribution(r, len, salt));
    }
    acc
}

pub fn gathered(n: usize, len: usize, salt: u64) -> Vec<i64> {
    (0..n).flat_map(|r| contribution(r, len, salt)).collect()
}
