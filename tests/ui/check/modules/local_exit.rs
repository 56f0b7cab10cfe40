use dist_runtime::prelude::*;

/// The distributed dot product: every rank's partial sum, reduced.
pub fn dot(g: &Grid, a: &[f64], b: &[f64]) -> dist_runtime::Result<f64> {
    let mut s = [a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>()];
    g.world.all_reduce(&mut s, ReduceOp::Sum)?;
    Ok(s[0])
}

/// The world and each rank's number of points.
pub struct Grid {
    pub world: Comm<World>,
    pub n: usize,
}

pub struct Config {
    pub tol: f64,
    pub max_iter: usize,
}

impl Config {
    pub fn from_args() -> Config {
        let mut cfg = Config { tol: 1e-6, max_iter: 100 };
        let args: Vec<String> = std::env::args().collect();
        for w in args.windows(2) {
            match w[0].as_str() {
                "--tol" => cfg.tol = w[1].parse().unwrap_or(cfg.tol),
                "--max-iter" => cfg.max_iter = w[1].parse().unwrap_or(cfg.max_iter),
                _ => {}
            }
        }
        cfg
    }
}

pub fn solve(g: &Grid, cfg: &Config) -> dist_runtime::Result<usize> {
    let r0 = g.world.rank() as f64;
    let mut r: Vec<f64> = (0..g.n).map(|i| r0 + i as f64).collect();
    let mut it = 0;
    while it < cfg.max_iter {
        let global = dot(g, &r, &r)?;
        for x in r.iter_mut() {
            *x *= 0.5;
        }
        it += 1;
        // The bug: the rank's own residual, not `global`.
        let local: f64 = r.iter().map(|x| x * x).sum();
        if local.sqrt() <= cfg.tol * global.sqrt() {
            break;
        }
    }
    Ok(it)
}
