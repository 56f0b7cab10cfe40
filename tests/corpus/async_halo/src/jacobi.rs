//! The five-point Jacobi kernel, the fixed boundary, and the serial reference solver.

use crate::cli::Config;

/// Initial values of global row `g`: the top edge is held hot, the left edge falls
/// linearly from hot to cold, everything else starts cold.
pub fn initial_row(g: usize, cfg: &Config) -> Vec<f64> {
    let mut row = vec![0.0; cfg.cols];
    if g == 0 {
        row.iter_mut().for_each(|v| *v = cfg.hot);
    } else {
        row[0] = cfg.hot * (1.0 - g as f64 / (cfg.rows - 1) as f64);
    }
    row
}

/// One row of one sweep: `out` gets the average of the four neighbours of each inner
/// point of `row` (edges copied). Returns the largest change. Edge rows of the grid are
/// copied unchanged, and never look at `above`/`below`.
pub fn relax_row(edge: bool, above: &[f64], row: &[f64], below: &[f64], out: &mut [f64]) -> f64 {
    let cols = row.len();
    out[0] = row[0];
    out[cols - 1] = row[cols - 1];
    if edge {
        out.copy_from_slice(row);
        return 0.0;
    }
    let mut change: f64 = 0.0;
    for j in 1..cols - 1 {
        let v = 0.25 * (above[j] + below[j] + row[j - 1] + row[j + 1]);
        change = change.max((v - row[j]).abs());
        out[j] = v;
    }
    change
}

/// What a solve ended with.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub sweeps: usize,
    pub change: f64,
    pub converged: bool,
}

/// Whether to stop after `sweep`, given the largest change of that sweep over the
/// whole grid (tested every `check_every` sweeps only).
pub fn should_stop(sweep: usize, cfg: &Config, global_change: f64) -> bool {
    sweep % cfg.check_every == 0 && global_change < cfg.tol
}

/// The whole grid on one process, with the same schedule of convergence tests.
pub fn serial_solve(cfg: &Config) -> (Vec<f64>, Outcome) {
    let (rows, cols) = (cfg.rows, cfg.cols);
    let mut cur: Vec<f64> = (0..rows).flat_map(|g| initial_row(g, cfg)).collect();
    let mut next = cur.clone();
    let mut out = Outcome { sweeps: 0, change: f64::INFINITY, converged: false };
    for sweep in 1..=cfg.steps {
        let mut change: f64 = 0.0;
        for g in 0..rows {
            let edge = g == 0 || g + 1 == rows;
            let above = if edge { &cur[0..0] } else { &cur[(g - 1) * cols..g * cols] };
            let below = if edge { &cur[0..0] } else { &cur[(g + 1) * cols..(g + 2) * cols] };
            let c = relax_row(edge, above, &cur[g * cols..(g + 1) * cols], below, &mut next[g * cols..(g + 1) * cols]);
            change = change.max(c);
        }
        std::mem::swap(&mut cur, &mut next);
        out.sweeps = sweep;
        if sweep % cfg.check_every == 0 {
            out.change = change;
            if should_stop(sweep, cfg, change) {
                out.converged = true;
                break;
            }
        }
    }
    (cur, out)
}
