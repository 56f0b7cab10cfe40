//! Distances, centroid updates and the serial k-means the distributed one must match.

use crate::data::DIM;

pub fn sq_dist(p: &[i64], c: &[f64]) -> f64 {
    p.iter().zip(c).map(|(&x, &y)| (x as f64 - y) * (x as f64 - y)).sum()
}

/// Index of the nearest centroid; ties go to the lower index.
pub fn nearest(p: &[i64], centroids: &[f64]) -> usize {
    let dists = centroids.chunks(DIM).map(|c| sq_dist(p, c));
    let (mut best, mut best_d) = (0, f64::INFINITY);
    for (c, d) in dists.enumerate() {
        if d < best_d {
            (best, best_d) = (c, d);
        }
    }
    best
}

/// Mean of each cluster; an empty cluster keeps its old centroid.
pub fn centroids_from(sums: &[i64], counts: &[i64], old: &[f64]) -> Vec<f64> {
    old.chunks(DIM)
        .enumerate()
        .flat_map(move |(c, prev)| {
            let n = counts[c];
            (0..DIM).map(move |j| if n == 0 { prev[j] } else { sums[c * DIM + j] as f64 / n as f64 })
        })
        .collect()
}

/// Largest distance any centroid moved.
pub fn max_shift(old: &[f64], new: &[f64]) -> f64 {
    old.chunks(DIM)
        .zip(new.chunks(DIM))
        .map(|(a, b)| a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum::<f64>().sqrt())
        .fold(0.0, f64::max)
}

pub struct SerialResult {
    pub assign: Vec<usize>,
    pub centroids: Vec<f64>,
    pub iters: usize,
    pub inertia: f64,
}

/// Lloyd's algorithm on all points, seeded and stopped exactly as `DistKMeans::run`.
pub fn serial_kmeans(points: &[i64], k: usize, max_iters: usize, tol: f64) -> SerialResult {
    let n = points.len() / DIM;
    let mut centroids: Vec<f64> = (0..k)
        .flat_map(move |c| {
            let i = c * n / k;
            points[i * DIM..(i + 1) * DIM].iter().map(|&x| x as f64)
        })
        .collect();
    let mut assign = vec![usize::MAX; n];
    let mut iters = max_iters;
    for it in 0..max_iters {
        let mut changed = 0;
        for (p, a) in points.chunks(DIM).zip(assign.iter_mut()) {
            let best = nearest(p, &centroids);
            if *a != best {
                *a = best;
                changed += 1;
            }
        }
        let mut sums = vec![0i64; k * DIM];
        let mut counts = vec![0i64; k];
        for (p, &a) in points.chunks(DIM).zip(&assign) {
            counts[a] += 1;
            sums[a * DIM..(a + 1) * DIM].iter_mut().zip(p).for_each(|(s, x)| *s += x);
        }
        let next = centroids_from(&sums, &counts, &centroids);
        let shift = max_shift(&centroids, &next);
        centroids = next;
        if changed == 0 || shift <= tol {
            iters = it + 1;
            break;
        }
    }
    let inertia = points
        .chunks(DIM)
        .zip(&assign)
        .map(|(p, &a)| sq_dist(p, &centroids[a * DIM..(a + 1) * DIM]))
        .sum();
    SerialResult { assign, centroids, iters, inertia }
}
