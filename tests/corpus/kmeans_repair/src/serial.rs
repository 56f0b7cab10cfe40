//! The same k-means in one process over the whole data set.

use crate::config::{Config, Init};
use crate::data::{self, nearest};

pub struct Serial {
    pub assign: Vec<usize>,
    pub centroids: Vec<f64>,
    pub iterations: usize,
    pub repairs: usize,
}

pub fn kmeans(cfg: &Config, rank0_points: usize) -> Serial {
    let (k, dim) = (cfg.k, cfg.dim);
    let pts: Vec<Vec<f64>> = (0..cfg.points).map(|i| data::point(cfg.seed, i, dim)).collect();
    let mut c = vec![0.0; k * dim];
    let take = if cfg.init == Init::Far { k - 1 } else { k };
    for j in 0..take.min(rank0_points) {
        c[j * dim..(j + 1) * dim].copy_from_slice(&pts[j]);
    }
    if cfg.init == Init::Far {
        c[(k - 1) * dim..].copy_from_slice(&data::far_point(dim));
    }
    let mut assign = vec![0; pts.len()];
    let (mut it, mut repairs) = (0, 0);
    while it < cfg.max_iter {
        let mut sums = vec![0.0; k * dim];
        let mut counts = vec![0u64; k];
        for (i, p) in pts.iter().enumerate() {
            let (j, _) = nearest(p, &c, dim);
            assign[i] = j;
            counts[j] += 1;
            sums[j * dim..(j + 1) * dim].iter_mut().zip(p).for_each(|(s, x)| *s += x);
        }
        let mut new = c.clone();
        let mut used: Vec<usize> = Vec::new();
        for j in 0..k {
            if counts[j] > 0 {
                for d in 0..dim {
                    new[j * dim + d] = sums[j * dim + d] / counts[j] as f64;
                }
                continue;
            }
            let mut best: Option<(usize, f64)> = None;
            for (i, p) in pts.iter().enumerate() {
                if used.contains(&i) {
                    continue;
                }
                let d = data::dist2(p, &c[assign[i] * dim..(assign[i] + 1) * dim]);
                if best.is_none_or(|(_, bd)| d > bd) {
                    best = Some((i, d));
                }
            }
            let (i, _) = best.expect("a point to move");
            used.push(i);
            new[j * dim..(j + 1) * dim].copy_from_slice(&pts[i]);
            repairs += 1;
        }
        let shift = new.chunks(dim).zip(c.chunks(dim)).map(|(a, b)| data::dist2(a, b).sqrt()).fold(0.0, f64::max);
        c = new;
        it += 1;
        if shift <= cfg.tol {
            break;
        }
    }
    for (i, p) in pts.iter().enumerate() {
        assign[i] = nearest(p, &c, dim).0;
    }
    Serial { assign, centroids: c, iterations: it, repairs }
}
