//! The distributed Lloyd iteration: each rank owns a block of points.

use crate::config::{Config, Init};
use crate::data::{self, nearest};
use crate::repair::farthest_point;
use dist_runtime::prelude::*;

pub struct KMeans {
    comm: Comm<World>,
    pub dim: usize,
    pub k: usize,
    pub points: Vec<Vec<f64>>,
    pub assign: Vec<usize>,
    pub centroids: Vec<f64>,
    pub repairs: usize,
}

pub struct Summary {
    pub iterations: usize,
    pub inertia: f64,
}

impl KMeans {
    pub fn new(comm: &Comm<World>, cfg: &Config) -> KMeans {
        let (offset, count) = data::block(cfg.points, comm.size(), comm.rank());
        let points: Vec<Vec<f64>> = (offset..offset + count).map(|i| data::point(cfg.seed, i, cfg.dim)).collect();
        KMeans {
            comm: comm.clone(),
            dim: cfg.dim,
            k: cfg.k,
            assign: vec![0; points.len()],
            points,
            centroids: vec![0.0; cfg.k * cfg.dim],
            repairs: 0,
        }
    }

    /// Rank 0 picks the initial centroids from its own points and broadcasts them.
    pub fn init(&mut self, init: Init) -> dist_runtime::Result<()> {
        if self.comm.rank() == 0 {
            let take = match init {
                Init::First => self.k,
                Init::Far => self.k - 1,
            };
            for (j, p) in self.points.iter().take(take).enumerate() {
                self.centroids[j * self.dim..(j + 1) * self.dim].copy_from_slice(p);
            }
            if init == Init::Far {
                let j = self.k - 1;
                self.centroids[j * self.dim..].copy_from_slice(&data::far_point(self.dim));
            }
        }
        self.comm.broadcast(&mut self.centroids, 0)
    }

    /// Assigns every local point; returns the local sums, counts and inertia.
    fn assign_local(&mut self) -> (Vec<f64>, Vec<u64>, f64) {
        let (dim, k) = (self.dim, self.k);
        let mut sums = vec![0.0; k * dim];
        let mut counts = vec![0u64; k];
        let mut inertia = 0.0;
        for (i, p) in self.points.iter().enumerate() {
            let (j, d) = nearest(p, &self.centroids, dim);
            self.assign[i] = j;
            counts[j] += 1;
            inertia += d;
            sums[j * dim..(j + 1) * dim].iter_mut().zip(p).for_each(|(s, x)| *s += x);
        }
        (sums, counts, inertia)
    }

    /// This rank's point farthest from its centroid, skipping points already used to
    /// repair a cluster in this iteration.
    fn local_farthest(&self, used: &[usize]) -> Option<(usize, f64)> {
        self.points
            .iter()
            .enumerate()
            .filter(|(i, _)| !used.contains(i))
            .map(|(i, p)| (i, data::dist2(p, &self.centroids[self.assign[i] * self.dim..][..self.dim])))
            .fold(None, |best: Option<(usize, f64)>, (i, d)| match best {
                Some((_, bd)) if bd >= d => best,
                _ => Some((i, d)),
            })
    }

    /// One Lloyd step. Returns (shift, inertia) after the update.
    pub fn step(&mut self) -> dist_runtime::Result<(f64, f64)> {
        let (mut sums, mut counts, inertia) = self.assign_local();
        self.comm.all_reduce(&mut sums, ReduceOp::Sum)?;
        self.comm.all_reduce(&mut counts, ReduceOp::Sum)?;
        let mut total_inertia = [inertia];
        self.comm.all_reduce(&mut total_inertia, ReduceOp::Sum)?;

        let dim = self.dim;
        let mut new = self.centroids.clone();
        let mut used = Vec::new();
        for j in 0..self.k {
            if counts[j] > 0 {
                let c = counts[j] as f64;
                new[j * dim..(j + 1) * dim].iter_mut().zip(&sums[j * dim..]).for_each(|(n, s)| *n = s / c);
                continue;
            }
            // Empty cluster: move it onto the farthest point anywhere.
            let far = self.local_farthest(&used);
            let (owner, p) = farthest_point(&self.comm, far, &self.points, dim)?;
            if owner == self.comm.rank() {
                used.push(far.expect("owner").0);
            }
            new[j * dim..(j + 1) * dim].copy_from_slice(&p);
            self.repairs += 1;
        }
        let shift = new
            .chunks(dim)
            .zip(self.centroids.chunks(dim))
            .map(|(a, b)| data::dist2(a, b).sqrt())
            .fold(0.0, f64::max);
        self.centroids = new;
        Ok((shift, total_inertia[0]))
    }

    pub fn run(&mut self, cfg: &Config) -> dist_runtime::Result<Summary> {
        self.init(cfg.init)?;
        let mut it = 0;
        let mut inertia = f64::INFINITY;
        while it < cfg.max_iter {
            let (shift, inert) = self.step()?;
            inertia = inert;
            it += 1;
            if cfg.verbose && self.comm.rank() == 0 {
                println!("iter {it:3}: shift {shift:.3e}, inertia {inert:.6}");
            }
            if shift <= cfg.tol {
                break;
            }
        }
        // Final assignment against the final centroids.
        self.assign_local();
        Ok(Summary { iterations: it, inertia })
    }
}
