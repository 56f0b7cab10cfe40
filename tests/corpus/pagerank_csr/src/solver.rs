//! The distributed power iteration.

use dist_runtime::prelude::*;

use crate::config::Config;
use crate::exchange::ContributionPlan;
use crate::graph::{out_neighbours, LocalCsr};

pub struct Solver {
    world: Comm<World>,
    cfg: Config,
    csr: LocalCsr,
    plan: ContributionPlan,
    pub pr: Vec<f64>,
}

impl Solver {
    pub fn new(world: Comm<World>, cfg: Config, csr: LocalCsr, plan: ContributionPlan) -> Solver {
        let pr = vec![1.0 / cfg.vertices as f64; csr.rows()];
        Solver { world, cfg, csr, plan, pr }
    }

    /// One iteration; returns the global L1 change.
    pub fn step(&mut self) -> dist_runtime::Result<f64> {
        let n = self.cfg.vertices as f64;
        let mut outgoing = vec![0.0; self.plan.send_len()];
        let mut dangling = [0.0f64];
        for i in 0..self.csr.rows() {
            let outs = self.csr.row(i);
            if outs.is_empty() {
                dangling[0] += self.pr[i];
                continue;
            }
            let share = self.pr[i] / outs.len() as f64;
            for e in self.csr.row_ptr[i]..self.csr.row_ptr[i + 1] {
                outgoing[self.plan.slot(e)] += share;
            }
        }
        self.world.all_reduce(&mut dangling, ReduceOp::Sum)?;
        let incoming = self.plan.exchange(&outgoing, self.csr.rows())?;
        let d = self.cfg.damping;
        let base = (1.0 - d) / n + d * dangling[0] / n;
        let next: Vec<f64> = incoming.iter().map(|x| base + d * x).collect();
        let mut change = [next.iter().zip(&self.pr).map(|(a, b)| (a - b).abs()).sum::<f64>()];
        self.world.all_reduce(&mut change, ReduceOp::Sum)?;
        self.pr = next;
        Ok(change[0])
    }

    /// Iterates until the change drops below the tolerance; returns the iterations run.
    pub fn run(&mut self) -> dist_runtime::Result<usize> {
        for iter in 1..=self.cfg.max_iters {
            let change = self.step()?;
            if change < self.cfg.tol {
                return Ok(iter);
            }
        }
        Ok(self.cfg.max_iters)
    }
}

/// The single-process reference: the whole graph, the same iteration.
pub fn serial_pagerank(cfg: &Config) -> (Vec<f64>, usize) {
    let n = cfg.vertices;
    let adj: Vec<Vec<usize>> = (0..n).map(|v| out_neighbours(v, n, cfg.avg_degree, cfg.seed)).collect();
    let mut pr = vec![1.0 / n as f64; n];
    for iter in 1..=cfg.max_iters {
        let mut incoming = vec![0.0; n];
        let mut dangling = 0.0;
        for (u, outs) in adj.iter().enumerate() {
            if outs.is_empty() {
                dangling += pr[u];
            } else {
                let share = pr[u] / outs.len() as f64;
                outs.iter().for_each(|&v| incoming[v] += share);
            }
        }
        let base = (1.0 - cfg.damping) / n as f64 + cfg.damping * dangling / n as f64;
        let next: Vec<f64> = incoming.iter().map(|x| base + cfg.damping * x).collect();
        let change: f64 = next.iter().zip(&pr).map(|(a, b)| (a - b).abs()).sum();
        pr = next;
        if change < cfg.tol {
            return (pr, iter);
        }
    }
    (pr, cfg.max_iters)
}
