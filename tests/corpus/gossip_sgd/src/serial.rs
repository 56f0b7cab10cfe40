//! The serial reference: every rank's model simulated in one process, with the same
//! schedule, the same arithmetic and the same reduction order.

use crate::config::Config;
use crate::consensus::{dist2, Check};
use crate::gossip::exchange_for;
use crate::model::{average_into, sgd_step, Shard};

pub struct SerialRun {
    pub weights: Vec<Vec<f64>>,
    pub checks: Vec<Check>,
}

pub fn simulate(cfg: &Config, n: usize) -> SerialRun {
    let shards: Vec<Shard> = (0..n).map(|r| Shard::generate(cfg, r)).collect();
    let mut w = vec![vec![0.0; cfg.dim]; n];
    let mut checks = Vec::new();
    for t in 0..cfg.max_steps {
        for (wr, shard) in w.iter_mut().zip(&shards) {
            let g = shard.grad(wr);
            sgd_step(wr, &g, cfg.lr);
        }
        // Every rank receives from its `from` the value before this step's mixing.
        let before = w.clone();
        for (r, wr) in w.iter_mut().enumerate() {
            if let Some(ex) = exchange_for(cfg.schedule, r, n, t) {
                average_into(wr, &before[ex.from]);
            }
        }
        if (t + 1) % cfg.check_every == 0 {
            let mut mean = w[0].clone();
            for wr in &w[1..] {
                mean.iter_mut().zip(wr).for_each(|(m, x)| *m += x);
            }
            mean.iter_mut().for_each(|m| *m /= n as f64);
            let spread = w.iter().map(|wr| dist2(wr, &mean)).fold(f64::NEG_INFINITY, f64::max);
            let loss = shards.iter().zip(&w).map(|(s, wr)| s.loss(wr)).reduce(|a, b| a + b).unwrap() / n as f64;
            let c = Check { step: t + 1, loss, spread };
            checks.push(c);
            if c.converged(cfg.tol) {
                break;
            }
        }
    }
    SerialRun { weights: w, checks }
}
