//! Power iteration, distributed by block rows, and the same in one process.

use crate::halo::HaloPlan;
use crate::matrix::{spmv_full, uniform, Generator, Partition, Row};
use dist_runtime::prelude::*;

pub struct DistMatrix {
    comm: Comm<World>,
    start: usize,
    rows: Vec<Row>,
    plan: HaloPlan,
    ghosts: Vec<f64>,
}

impl DistMatrix {
    pub fn new(comm: &Comm<World>, gen: &Generator) -> DistMatrix {
        let part = Partition::new(gen.n, comm.size());
        let range = part.range(comm.rank());
        let rows = gen.rows(range.clone());
        let plan = HaloPlan::build(comm.rank(), &part, &rows);
        let ghosts = vec![0.0; plan.ghost_count()];
        DistMatrix { comm: comm.clone(), start: range.start, rows, plan, ghosts }
    }

    pub fn local_rows(&self) -> std::ops::Range<usize> {
        self.start..self.start + self.rows.len()
    }

    pub fn plan(&self) -> &HaloPlan {
        &self.plan
    }

    /// y = A x for this rank's rows; `x` holds this rank's entries only.
    pub fn spmv(&mut self, x: &[f64]) -> dist_runtime::Result<Vec<f64>> {
        self.plan.exchange(&self.comm, x, &mut self.ghosts)?;
        let end = self.start + self.rows.len();
        let y = self
            .rows
            .iter()
            .map(|row| {
                row.cols
                    .iter()
                    .zip(&row.vals)
                    .map(|(&j, v)| {
                        let xj = if (self.start..end).contains(&j) {
                            x[j - self.start]
                        } else {
                            self.ghosts[self.plan.slot(j).expect("a ghost in the plan")]
                        };
                        v * xj
                    })
                    .sum()
            })
            .collect();
        Ok(y)
    }
}

pub struct Eigen {
    pub lambda: f64,
    pub iters: usize,
    pub vector: Vec<f64>,
}

pub fn start_vector(seed: u64, range: std::ops::Range<usize>) -> Vec<f64> {
    range.map(|i| 1.0 + uniform(seed, i as u64, 99_999)).collect()
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

pub fn power_iteration(
    a: &mut DistMatrix,
    comm: &Comm<World>,
    mut x: Vec<f64>,
    tol: f64,
    max_iter: usize,
) -> dist_runtime::Result<Eigen> {
    let mut nrm = [dot(&x, &x)];
    comm.all_reduce(&mut nrm, ReduceOp::Sum)?;
    x.iter_mut().for_each(|v| *v /= nrm[0].sqrt());
    let mut lambda;
    let mut iters = 0;
    loop {
        let y = a.spmv(&x)?;
        let mut global = [dot(&x, &y), dot(&y, &y)];
        comm.all_reduce(&mut global, ReduceOp::Sum)?;
        lambda = global[0];
        let res_local = [y.iter().zip(&x).map(|(yi, xi)| (yi - lambda * xi).powi(2)).sum::<f64>()];
        let mut res = res_local;
        comm.all_reduce(&mut res, ReduceOp::Sum)?;
        iters += 1;
        let ynorm = global[1].sqrt();
        x = y.iter().map(|v| v / ynorm).collect();
        if res[0].sqrt() < tol * lambda.abs() || iters >= max_iter {
            break;
        }
    }
    Ok(Eigen { lambda, iters, vector: x })
}

pub fn serial_power_iteration(gen: &Generator, tol: f64, max_iter: usize) -> Eigen {
    let rows = gen.rows(0..gen.n);
    let mut x = start_vector(gen.seed, 0..gen.n);
    let nrm = dot(&x, &x).sqrt();
    x.iter_mut().for_each(|v| *v /= nrm);
    let mut lambda;
    let mut iters = 0;
    loop {
        let y = spmv_full(&rows, &x);
        lambda = dot(&x, &y);
        let res: f64 = y.iter().zip(&x).map(|(yi, xi)| (yi - lambda * xi).powi(2)).sum();
        iters += 1;
        let ynorm = dot(&y, &y).sqrt();
        x = y.iter().map(|v| v / ynorm).collect();
        if res.sqrt() < tol * lambda.abs() || iters >= max_iter {
            break;
        }
    }
    Eigen { lambda, iters, vector: x }
}
