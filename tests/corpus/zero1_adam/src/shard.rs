//! How rows and parameters are split across ranks.

/// `len` rounded up to a multiple of `n`.
pub fn padded_len(len: usize, n: usize) -> usize {
    len.div_ceil(n) * n
}

/// Rows `lo..hi` of rank `r` of `n`: the first `len % n` ranks get one more row.
pub fn row_range(len: usize, n: usize, r: usize) -> (usize, usize) {
    let base = len / n;
    let extra = len % n;
    let lo = r * base + r.min(extra);
    let hi = lo + base + usize::from(r < extra);
    (lo, hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_cover_everything() {
        for n in 1..9 {
            let mut next = 0;
            for r in 0..n {
                let (lo, hi) = row_range(53, n, r);
                assert_eq!(lo, next);
                next = hi;
            }
            assert_eq!(next, 53);
        }
    }
}
