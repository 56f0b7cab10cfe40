//! Lloyd's k-means over block-distributed points; cluster sums are all-reduced.

use std::ops::Range;

use dist_runtime::prelude::*;

use crate::data::{Blocks, DIM};
use crate::geometry::{centroids_from, max_shift, nearest, sq_dist};

pub struct DistKMeans {
    comm: Comm<World>,
    blocks: Blocks,
    range: Range<usize>,
    k: usize,
    points: Vec<i64>,
    pub assign: Vec<usize>,
    pub centroids: Vec<f64>,
    pub shifts: Vec<f64>,
}

impl DistKMeans {
    pub fn new(comm: &Comm<World>, blocks: Blocks, k: usize, points: Vec<i64>) -> Self {
        let range = blocks.range(comm.rank());
        let assign = vec![usize::MAX; range.len()];
        DistKMeans { comm: comm.clone(), blocks, range, k, points, assign, centroids: vec![0.0; k * DIM], shifts: Vec::new() }
    }

    /// Centroid c starts at point `c * n / k`, sent by the rank that owns it.
    fn init_centroids(&mut self) -> dist_runtime::Result<()> {
        for c in 0..self.k {
            let idx = c * self.blocks.n / self.k;
            let owner = self.blocks.owner(idx);
            let mut buf = [0i64; DIM];
            if owner == self.comm.rank() {
                let off = (idx - self.range.start) * DIM;
                buf.copy_from_slice(&self.points[off..off + DIM]);
            }
            self.comm.broadcast(&mut buf, owner)?;
            for (dst, &x) in self.centroids[c * DIM..(c + 1) * DIM].iter_mut().zip(&buf) {
                *dst = x as f64;
            }
        }
        Ok(())
    }

    /// Assigns every local point to its nearest centroid; returns how many moved.
    fn assign_local(&mut self) -> usize {
        let centroids = &self.centroids;
        self.points
            .chunks(DIM)
            .zip(self.assign.iter_mut())
            .map(|(p, a)| {
                let best = nearest(p, centroids);
                std::mem::replace(a, best) != best
            })
            .filter(|&moved| moved)
            .count()
    }

    /// New centroids from the global sums and counts; returns the largest move.
    fn update(&mut self) -> dist_runtime::Result<f64> {
        let k = self.k;
        let mut sums = vec![0i64; k * DIM];
        let mut counts = vec![0i64; k];
        for (p, &a) in self.points.chunks(DIM).zip(&self.assign) {
            counts[a] += 1;
            sums[a * DIM..(a + 1) * DIM].iter_mut().zip(p).for_each(|(s, x)| *s += x);
        }
        self.comm.all_reduce(&mut sums, ReduceOp::Sum)?;
        self.comm.all_reduce(&mut counts, ReduceOp::Sum)?;
        let next = centroids_from(&sums, &counts, &self.centroids);
        let shift = max_shift(&self.centroids, &next);
        self.centroids = next;
        Ok(shift)
    }

    /// Iterates until no point changes cluster anywhere, the centroids stop moving,
    /// or `max_iters`; returns the number of iterations run.
    pub fn run(&mut self, max_iters: usize, tol: f64) -> dist_runtime::Result<usize> {
        self.init_centroids()?;
        for it in 0..max_iters {
            let changed = self.assign_local();
            let shift = self.update()?;
            self.shifts.push(shift);
            let mut moved = [changed as u64];
            self.comm.all_reduce(&mut moved, ReduceOp::Sum)?;
            if moved[0] == 0 || shift <= tol {
                return Ok(it + 1);
            }
        }
        Ok(max_iters)
    }

    /// Sum of squared distances of every point to its centroid.
    pub fn inertia(&self) -> dist_runtime::Result<f64> {
        let local: f64 = self
            .points
            .chunks(DIM)
            .zip(&self.assign)
            .map(|(p, &a)| sq_dist(p, &self.centroids[a * DIM..(a + 1) * DIM]))
            .sum();
        let mut buf = [local];
        self.comm.all_reduce(&mut buf, ReduceOp::Sum)?;
        Ok(buf[0])
    }

    /// Every point's cluster on `root`, in point order (`Some` there only).
    pub fn gather_assignments(&self, root: usize) -> dist_runtime::Result<Option<Vec<u64>>> {
        let mine: Vec<u64> = self.assign.iter().map(|&a| a as u64).collect();
        let counts = self.blocks.counts();
        if self.comm.rank() == root {
            let mut all = vec![0u64; self.blocks.n];
            self.comm.gather_v(&mine, Some(&mut all[..]), &counts, root)?;
            Ok(Some(all))
        } else {
            self.comm.gather_v(&mine, None, &counts, root)?;
            Ok(None)
        }
    }
}
