//! The same scheme on the whole rod in one process. The residual is summed block by
//! block in rank order, as the all_reduce does, so the stopping step is the same.

use crate::config::Params;
use crate::grid::Decomposition;
use crate::solver::RunSummary;
use crate::stencil::{squared_change, Scheme};

pub fn solve(initial: &[f64], p: &Params, blocks: &Decomposition) -> (Vec<f64>, RunSummary) {
    let scheme = Scheme { alpha: p.alpha, kappa: p.kappa };
    let n = initial.len();
    let mut u = initial.to_vec();
    let mut next = vec![0.0; n];
    let mut summary = RunSummary { steps: 0, residual: f64::INFINITY };
    for step in 1..=p.max_steps {
        for i in 0..n {
            let left = if i == 0 { p.left_bc } else { u[i - 1] };
            let right = if i + 1 == n { p.right_bc } else { u[i + 1] };
            next[i] = scheme.point(left, u[i], right);
        }
        let checked = step % p.check_every == 0;
        if checked {
            let total: f64 = blocks
                .counts
                .iter()
                .zip(&blocks.offsets)
                .map(|(&c, &o)| squared_change(&u[o..o + c], &next[o..o + c]))
                .sum();
            summary.residual = total.sqrt();
        }
        std::mem::swap(&mut u, &mut next);
        summary.steps = step;
        if checked && summary.residual < p.tol {
            break;
        }
    }
    (u, summary)
}
