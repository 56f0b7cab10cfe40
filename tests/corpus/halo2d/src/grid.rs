//! The process grid: `px × py` ranks laid out row-major, each owning a rectangle of
//! the global `nx × ny` domain. Neighbours across the physical boundary are `None`.

use std::ops::Range;

#[derive(Clone, Copy, Debug, Default)]
pub struct Neighbours {
    pub north: Option<usize>,
    pub south: Option<usize>,
    pub west: Option<usize>,
    pub east: Option<usize>,
}

#[derive(Clone, Debug)]
pub struct Grid {
    pub px: usize,
    pub py: usize,
    /// Global rows (y) and columns (x) this rank owns.
    pub rows: Range<usize>,
    pub cols: Range<usize>,
    pub nbr: Neighbours,
}

/// Split `n` ranks into `px × py` with `px >= py` as square as possible, unless the
/// caller insists on a `px`.
pub fn dims(n: usize, px: Option<usize>) -> (usize, usize) {
    if let Some(px) = px {
        assert!(px > 0 && n % px == 0, "--px {px} does not divide the {n} ranks");
        return (px, n / px);
    }
    let py = (1..=n).filter(|d| n % d == 0 && d * d <= n).max().unwrap_or(1);
    (n / py, py)
}

fn split(len: usize, parts: usize, i: usize) -> Range<usize> {
    let (q, r) = (len / parts, len % parts);
    let start = i * q + i.min(r);
    start..start + q + usize::from(i < r)
}

impl Grid {
    pub fn new(rank: usize, size: usize, nx: usize, ny: usize, px: Option<usize>) -> Grid {
        let (px, py) = dims(size, px);
        assert!(nx >= px && ny >= py, "domain {nx}x{ny} too small for a {px}x{py} process grid");
        let (cx, cy) = (rank % px, rank / px);
        let nbr = Neighbours {
            north: (cy > 0).then(|| rank - px),
            south: (cy + 1 < py).then(|| rank + px),
            west: (cx > 0).then(|| rank - 1),
            east: (cx + 1 < px).then(|| rank + 1),
        };
        Grid { px, py, rows: split(ny, py, cy), cols: split(nx, px, cx), nbr }
    }

    pub fn width(&self) -> usize {
        self.cols.len()
    }

    pub fn height(&self) -> usize {
        self.rows.len()
    }
}
