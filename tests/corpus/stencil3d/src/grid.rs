//! The 2-D process grid over (x, y) and the local block with one layer of halo cells.

/// `(start, len)` of block `idx` of `n` points over `parts` (the first `n % parts` longer).
pub fn split_range(n: usize, parts: usize, idx: usize) -> (usize, usize) {
    let (base, rem) = (n / parts, n % parts);
    (idx * base + idx.min(rem), base + usize::from(idx < rem))
}

/// The part of `split_range(n, parts, _)` holding point `g`.
pub fn owner(n: usize, parts: usize, g: usize) -> usize {
    (0..parts).find(|&c| { let (s, l) = split_range(n, parts, c); (s..s + l).contains(&g) }).unwrap_or(parts - 1)
}

/// The most square `px × py == size` with `px <= py`.
pub fn factor2(size: usize) -> (usize, usize) {
    let px = (1..=size).take_while(|d| d * d <= size).filter(|d| size % d == 0).last().unwrap_or(1);
    (px, size / px)
}

#[derive(Clone, Debug)]
pub struct Decomp {
    pub px: usize, pub py: usize, // the process grid
    pub cx: usize, pub cy: usize, // this rank's place in it
    pub x0: usize, pub lx: usize, pub y0: usize, pub ly: usize, // this rank's block
    pub nx: usize, pub ny: usize, pub nz: usize,
}

impl Decomp {
    pub fn new(nx: usize, ny: usize, nz: usize, px: usize, py: usize, rank: usize) -> Decomp {
        let (cx, cy) = (rank / py, rank % py);
        let ((x0, lx), (y0, ly)) = (split_range(nx, px, cx), split_range(ny, py, cy));
        Decomp { px, py, cx, cy, x0, lx, y0, ly, nx, ny, nz }
    }
    pub fn rank_of(&self, cx: usize, cy: usize) -> usize { cx * self.py + cy }
    /// Interior points of rank `r`'s block.
    pub fn block_len(&self, r: usize) -> usize {
        split_range(self.nx, self.px, r / self.py).1 * split_range(self.ny, self.py, r % self.py).1 * self.nz
    }
    pub fn owner_x(&self, gx: usize) -> usize { owner(self.nx, self.px, gx) }
    pub fn owner_y(&self, gy: usize) -> usize { owner(self.ny, self.py, gy) }
    // Neighbours (ranks of the x and y communicators), `None` at the physical boundary.
    pub fn left(&self) -> Option<usize> { self.cx.checked_sub(1) }
    pub fn right(&self) -> Option<usize> {
        if self.cx + 1 < self.px { Some(self.cx + 1) } else { None }
    }
    pub fn down(&self) -> Option<usize> { self.cy.checked_sub(1) }
    pub fn up(&self) -> Option<usize> {
        if self.cy + 1 < self.py { Some(self.cy + 1) } else { None }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Axis { X, Y }

/// `lx × ly × nz` points padded by one halo cell on every side (0 at the boundary).
#[derive(Clone, Debug)]
pub struct Field { pub lx: usize, pub ly: usize, pub nz: usize, pub data: Vec<f64> }

impl Field {
    pub fn zeros(lx: usize, ly: usize, nz: usize) -> Field {
        Field { lx, ly, nz, data: vec![0.0; (lx + 2) * (ly + 2) * (nz + 2)] }
    }
    #[inline]
    pub fn idx(&self, i: usize, j: usize, k: usize) -> usize { (i * (self.ly + 2) + j) * (self.nz + 2) + k }
    /// The interior points, (i, j, k) with k fastest.
    pub fn interior(&self) -> Vec<f64> {
        let cols = (1..=self.lx).flat_map(|i| (1..=self.ly).map(move |j| (i, j)));
        cols.flat_map(|(i, j)| { let b = self.idx(i, j, 1); self.data[b..b + self.nz].to_vec() }).collect()
    }
    /// Start of each z-column of plane `at` normal to `axis` (interior only).
    fn columns(&self, axis: Axis, at: usize) -> Vec<usize> {
        match axis {
            Axis::X => (1..=self.ly).map(|j| self.idx(at, j, 1)).collect(),
            Axis::Y => (1..=self.lx).map(|i| self.idx(i, at, 1)).collect(),
        }
    }
    pub fn pack(&self, axis: Axis, at: usize, buf: &mut [f64]) {
        for (c, chunk) in self.columns(axis, at).into_iter().zip(buf.chunks_mut(self.nz)) {
            chunk.copy_from_slice(&self.data[c..c + self.nz]);
        }
    }
    pub fn unpack(&mut self, axis: Axis, at: usize, buf: &[f64]) {
        for (c, chunk) in self.columns(axis, at).into_iter().zip(buf.chunks(self.nz)) {
            self.data[c..c + self.nz].copy_from_slice(chunk);
        }
    }
}
