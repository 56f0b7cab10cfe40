//! Flags (and TP_DEGREE) into a config; the generated weights and data.

use crate::model::Model;

#[derive(Debug, Clone)]
pub struct Config {
    pub seq: usize,
    pub hidden: usize,
    pub ffn: usize,
    pub steps: usize,
    pub lr: f64,
    pub seed: u64,
    /// Asked-for tensor-parallel degree (`--tp`, else `TP_DEGREE`, else 1).
    pub tp: usize,
}

impl Config {
    pub fn from_args() -> Result<Config, String> {
        let mut cfg = Config { seq: 10, hidden: 6, ffn: 12, steps: 4, lr: 0.1, seed: 42, tp: 0 };
        let mut args = std::env::args().skip(1);
        while let Some(flag) = args.next() {
            let value = args.next().ok_or(format!("{flag} needs a value"))?;
            let bad = |e: &dyn std::fmt::Display| format!("{flag} {value}: {e}");
            match flag.as_str() {
                "--seq" => cfg.seq = value.parse().map_err(|e| bad(&e))?,
                "--hidden" => cfg.hidden = value.parse().map_err(|e| bad(&e))?,
                "--ffn" => cfg.ffn = value.parse().map_err(|e| bad(&e))?,
                "--steps" => cfg.steps = value.parse().map_err(|e| bad(&e))?,
                "--lr" => cfg.lr = value.parse().map_err(|e| bad(&e))?,
                "--seed" => cfg.seed = value.parse().map_err(|e| bad(&e))?,
                "--tp" => cfg.tp = value.parse().map_err(|e| bad(&e))?,
                _ => return Err(format!("unknown flag {flag}")),
            }
        }
        if cfg.tp == 0 {
            cfg.tp = std::env::var("TP_DEGREE").ok().and_then(|v| v.parse().ok()).unwrap_or(1);
        }
        Ok(cfg)
    }

    /// The tp degree actually used: the asked one if it divides the world, else 1.
    pub fn tp_for(&self, world: usize) -> usize {
        if self.tp >= 1 && world % self.tp == 0 { self.tp } else { 1 }
    }
}

/// A tiny LCG giving uniform values in [-scale, scale).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(6364136223846793005).wrapping_add(0x2545_F491_4F6C_DD1D))
    }
    pub fn uniform(&mut self, scale: f64) -> f64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) * scale
    }
    pub fn vec(&mut self, len: usize, scale: f64) -> Vec<f64> {
        (0..len).map(|_| self.uniform(scale)).collect()
    }
}

/// The full model: w1t and w2 are F × H (W1 transposed, and W2), biases small.
pub fn init_model(cfg: &Config) -> Model {
    let mut g = Rng::new(cfg.seed);
    let s = 1.0 / (cfg.hidden as f64).sqrt();
    let (f, h) = (cfg.ffn, cfg.hidden);
    Model { hidden: h, rows: f, w1t: g.vec(f * h, s), b1: g.vec(f, 0.1), w2: g.vec(f * h, s), b2: g.vec(h, 0.1) }
}

/// One replica's batch: inputs and targets, each seq × hidden.
pub fn replica_data(cfg: &Config, replica: usize) -> (Vec<f64>, Vec<f64>) {
    let mut g = Rng::new(cfg.seed + 1000 + replica as u64);
    (g.vec(cfg.seq * cfg.hidden, 1.0), g.vec(cfg.seq * cfg.hidden, 0.5))
}

/// Rows [start, end) of `n` split in `parts` (the first n % parts one longer).
pub fn shard(n: usize, parts: usize, i: usize) -> (usize, usize) {
    let (base, extra) = (n / parts, n % parts);
    let start = i * base + i.min(extra);
    (start, start + base + usize::from(i < extra))
}
