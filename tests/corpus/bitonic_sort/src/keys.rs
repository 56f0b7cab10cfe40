//! Where keys live and what they are.

/// Block sizes: n / p each, the first n % p ranks one more.
pub fn block_counts(n: usize, p: usize) -> Vec<usize> {
    (0..p).map(|r| n / p + usize::from(r < n % p)).collect()
}

pub fn block_start(n: usize, p: usize, r: usize) -> usize {
    block_counts(n, p)[..r].iter().sum()
}

/// Key number `i` of the whole input, from a hash of (seed, i).
pub fn key(seed: u64, i: usize, range: i64) -> i64 {
    let mut x = seed.wrapping_add((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    x ^= x >> 30;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    (x % range as u64) as i64
}

pub fn local_keys(seed: u64, n: usize, p: usize, r: usize, range: i64) -> Vec<i64> {
    let start = block_start(n, p, r);
    (start..start + block_counts(n, p)[r]).map(|i| key(seed, i, range)).collect()
}

/// Merges two sorted runs.
pub fn merge(a: &[i64], b: &[i64]) -> Vec<i64> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i] <= b[j] {
            out.push(a[i]);
            i += 1;
        } else {
            out.push(b[j]);
            j += 1;
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}
