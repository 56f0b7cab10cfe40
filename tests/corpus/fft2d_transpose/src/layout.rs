//! Block distributions: which rows (or columns) each rank owns.

/// Range `lo..hi` of part `r` of `n` of `len` items; the first `len % n` parts get one more.
pub fn block(len: usize, n: usize, r: usize) -> (usize, usize) {
    let (base, extra) = (len / n, len % n);
    let lo = r * base + r.min(extra);
    (lo, lo + base + usize::from(r < extra))
}

pub fn block_len(len: usize, n: usize, r: usize) -> usize {
    let (lo, hi) = block(len, n, r);
    hi - lo
}

/// A `pr × pc` factorisation of `n` with `pr` the largest divisor `<= sqrt(n)`;
/// `None` when `n` is 1 or prime.
pub fn grid(n: usize) -> Option<(usize, usize)> {
    let pr = (1..=n).take_while(|d| d * d <= n).filter(|d| n % d == 0).last()?;
    if pr == 1 { None } else { Some((pr, n / pr)) }
}
