//! Points, a tiny PRNG, and the serial reference of the partition.

/// A point of the cloud; `id` is global and unique.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub id: u64,
    pub x: f64,
    pub y: f64,
}

impl Point {
    pub fn coord(&self, axis: Axis) -> f64 {
        match axis {
            Axis::X => self.x,
            Axis::Y => self.y,
        }
    }

    /// Packs into three f64s for the wire (ids stay far below 2^53).
    pub fn pack(&self, out: &mut Vec<f64>) {
        out.extend_from_slice(&[self.x, self.y, self.id as f64]);
    }

    pub fn unpack(raw: &[f64]) -> impl Iterator<Item = Point> + '_ {
        raw.chunks_exact(3).map(|c| Point { x: c[0], y: c[1], id: c[2] as u64 })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Axis {
    X,
    Y,
}

/// splitmix64: small, fast, and good enough for test data.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The point with global id `id`: a stretched, clustered cloud so the two axes differ.
pub fn point(seed: u64, id: u64) -> Point {
    let mut g = Rng::new(seed.wrapping_mul(1_000_003).wrapping_add(id));
    let cluster = (g.next_u64() % 3) as f64;
    let x = 4.0 * g.unit() + 2.0 * cluster;
    let y = g.unit() * (2.0 + 1.5 * cluster);
    Point { id, x, y }
}

/// The points rank `rank` starts with.
pub fn local_points(seed: u64, rank: usize, per_rank: usize) -> Vec<Point> {
    let first = (rank * per_rank) as u64;
    (first..first + per_rank as u64).map(|id| point(seed, id)).collect()
}

/// Bounding box as [min_x, min_y, max_x, max_y].
pub fn bbox(points: &[Point]) -> ([f64; 2], [f64; 2]) {
    let lo = points.iter().fold([f64::INFINITY; 2], |a, p| [a[0].min(p.x), a[1].min(p.y)]);
    let hi = points.iter().fold([f64::NEG_INFINITY; 2], |a, p| [a[0].max(p.x), a[1].max(p.y)]);
    (lo, hi)
}

/// The longer side of the box is the one we cut.
pub fn pick_axis(lo: [f64; 2], hi: [f64; 2]) -> Axis {
    if hi[0] - lo[0] >= hi[1] - lo[1] { Axis::X } else { Axis::Y }
}

/// How many of `total` points the lower `n_lo` of `n` parts should get.
pub fn target_below(total: u64, n_lo: usize, n: usize) -> u64 {
    total * n_lo as u64 / n as u64
}

/// The bisection search for a cut with `target` points strictly below it, with the
/// counting step supplied by the caller (a local count, or a distributed one).
pub fn bisect_cut<E>(
    mut lo: f64,
    mut hi: f64,
    target: u64,
    max_iters: usize,
    mut count_below: impl FnMut(f64) -> Result<u64, E>,
) -> Result<f64, E> {
    // Every point is below `hi` nudged up, so the search interval holds the answer.
    hi = next_up(hi);
    let mut mid = 0.5 * (lo + hi);
    for _ in 0..max_iters {
        mid = 0.5 * (lo + hi);
        let c = count_below(mid)?;
        if c == target {
            break;
        }
        if c < target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(mid)
}

fn next_up(x: f64) -> f64 {
    if x >= 0.0 { f64::from_bits(x.to_bits() + 1) } else { f64::from_bits(x.to_bits() - 1) }
}

/// A node of the cut tree, for printing.
#[derive(Debug, Clone)]
pub struct Cut {
    pub depth: usize,
    pub first_rank: usize,
    pub ranks: usize,
    pub axis: Axis,
    pub at: f64,
}

/// The serial reference: the same recursive bisection on one process, part `k` of the
/// result being what world rank `k` must end with (ids sorted).
pub fn serial_partition(points: Vec<Point>, n: usize, max_iters: usize) -> (Vec<Vec<u64>>, Vec<Cut>) {
    let mut parts = vec![Vec::new(); n];
    let mut cuts = Vec::new();
    serial_rec(points, 0, n, 0, max_iters, &mut parts, &mut cuts);
    for p in &mut parts {
        p.sort_unstable();
    }
    (parts, cuts)
}

fn serial_rec(
    points: Vec<Point>,
    first: usize,
    n: usize,
    depth: usize,
    max_iters: usize,
    parts: &mut [Vec<u64>],
    cuts: &mut Vec<Cut>,
) {
    if n == 1 {
        parts[first] = points.iter().map(|p| p.id).collect();
        return;
    }
    let (lo, hi) = bbox(&points);
    let axis = pick_axis(lo, hi);
    let a = axis as usize;
    let n_lo = n / 2;
    let target = target_below(points.len() as u64, n_lo, n);
    let at = bisect_cut::<()>(lo[a], hi[a], target, max_iters, |m| {
        Ok(points.iter().filter(|p| p.coord(axis) < m).count() as u64)
    })
    .expect("local count cannot fail");
    cuts.push(Cut { depth, first_rank: first, ranks: n, axis, at });
    let (below, above): (Vec<Point>, Vec<Point>) = points.into_iter().partition(|p| p.coord(axis) < at);
    serial_rec(below, first, n_lo, depth + 1, max_iters, parts, cuts);
    serial_rec(above, first + n_lo, n - n_lo, depth + 1, max_iters, parts, cuts);
}
