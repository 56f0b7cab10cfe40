//! The data set: point i is a function of (seed, i) alone, so every rank can make its
//! own block and the serial reference the whole set.

pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Point `i` of the data set: one of five blobs plus noise.
pub fn point(seed: u64, i: usize, dim: usize) -> Vec<f64> {
    let mut g = Rng::new(seed.wrapping_mul(1_000_003) + i as u64);
    let blob = (g.next_u64() % 5) as f64;
    (0..dim).map(|d| blob * (3.0 + d as f64) + g.unit() - 0.5).collect()
}

/// First global index and count of rank `r`'s block of `n` points over `size` ranks.
pub fn block(n: usize, size: usize, r: usize) -> (usize, usize) {
    let (base, extra) = (n / size, n % size);
    (r * base + r.min(extra), base + usize::from(r < extra))
}

/// A far-away point that no data point is nearest to.
pub fn far_point(dim: usize) -> Vec<f64> {
    vec![1.0e3; dim]
}

pub fn dist2(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

/// The nearest centroid (lowest index on ties) and the squared distance to it.
pub fn nearest(p: &[f64], centroids: &[f64], dim: usize) -> (usize, f64) {
    centroids
        .chunks(dim)
        .map(|c| dist2(p, c))
        .enumerate()
        .fold((usize::MAX, f64::INFINITY), |best, (j, d)| if d < best.1 { (j, d) } else { best })
}
