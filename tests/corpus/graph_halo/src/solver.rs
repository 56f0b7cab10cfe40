//! Jacobi sweeps for (alpha·I + L) x = b on the local block, and the serial reference.

use crate::config::Config;
use crate::graph::{rhs, Graph, Partition};
use crate::halo::Halo;

pub struct LocalJacobi<'g> {
    pub graph: &'g Graph,
    pub start: usize,
    pub x: Vec<f64>,
    pub halo: Halo,
    alpha: f64,
}

/// x_v ← (b_v + Σ_{w ~ v} x_w) / (alpha + deg v), reading neighbours through `get`.
fn update(g: &Graph, alpha: f64, v: usize, get: impl Fn(usize) -> f64) -> f64 {
    (rhs(v) + g.adj[v].iter().map(|&w| get(w)).sum::<f64>()) / (alpha + g.degree(v) as f64)
}

/// (b - A x)_v squared.
fn residual_sq(g: &Graph, alpha: f64, v: usize, get: impl Fn(usize) -> f64) -> f64 {
    let ax = (alpha + g.degree(v) as f64) * get(v) - g.adj[v].iter().map(|&w| get(w)).sum::<f64>();
    (rhs(v) - ax).powi(2)
}

impl<'g> LocalJacobi<'g> {
    pub fn new(graph: &'g Graph, start: usize, len: usize, halo: Halo, alpha: f64) -> Self {
        LocalJacobi { graph, start, x: vec![0.0; len], halo, alpha }
    }

    fn value(&self, w: usize) -> f64 {
        if (self.start..self.start + self.x.len()).contains(&w) { self.x[w - self.start] } else { self.halo.ghost[&w] }
    }

    /// One sweep: refresh the ghosts, then update every local vertex. Returns the
    /// largest change on this rank.
    pub fn sweep(&mut self) -> dist_runtime::Result<f64> {
        self.halo.exchange(&self.x)?;
        let new: Vec<f64> =
            (0..self.x.len()).map(|l| update(self.graph, self.alpha, self.start + l, |w| self.value(w))).collect();
        let change = new.iter().zip(&self.x).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
        self.x = new;
        Ok(change)
    }

    /// This rank's part of ‖b − A x‖², with the ghosts as of the last exchange
    /// refreshed first.
    pub fn local_residual(&mut self) -> dist_runtime::Result<f64> {
        self.halo.exchange(&self.x)?;
        Ok((0..self.x.len()).map(|l| residual_sq(self.graph, self.alpha, self.start + l, |w| self.value(w))).sum())
    }
}

/// The same iteration on one process, with the residual summed block by block in rank
/// order, as the all_reduce does. Returns (x, sweeps).
pub fn serial(g: &Graph, cfg: &Config, part: &Partition) -> (Vec<f64>, usize) {
    let mut x = vec![0.0; g.len()];
    let norm_b = (0..g.len()).map(|v| rhs(v).powi(2)).sum::<f64>().sqrt();
    for sweep in 1..=cfg.max_iter {
        let old = x.clone();
        x = (0..g.len()).map(|v| update(g, cfg.alpha, v, |w| old[w])).collect();
        if sweep % cfg.check_every == 0 {
            let res: f64 = (0..part.parts)
                .map(|r| part.range(r).map(|v| residual_sq(g, cfg.alpha, v, |w| x[w])).sum::<f64>())
                .fold(0.0, |a, b| a + b);
            if res.sqrt() <= cfg.tol * norm_b {
                return (x, sweep);
            }
        }
    }
    (x, cfg.max_iter)
}
