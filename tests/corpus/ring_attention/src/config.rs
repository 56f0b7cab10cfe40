//! Command-line configuration for the ring-attention run.

use std::str::FromStr;

#[derive(Debug, Clone)]
pub struct Config {
    /// Total sequence length, split across ranks in contiguous blocks.
    pub seq_len: usize,
    /// Head dimension.
    pub head_dim: usize,
    /// Seed for Q, K and V; rank 0's value wins.
    pub seed: u64,
    /// Rotate K/V with a batched isend/irecv pair instead of `sendrecv`.
    pub batched: bool,
    /// Relative tolerance against the serial reference.
    pub tol: f32,
}

impl Default for Config {
    fn default() -> Self {
        Config { seq_len: 37, head_dim: 8, seed: 2024, batched: false, tol: 1e-4 }
    }
}

fn parse<T: FromStr>(flag: &str, v: Option<String>) -> T {
    let v = v.unwrap_or_else(|| panic!("{flag} needs a value"));
    v.parse().unwrap_or_else(|_| panic!("bad value for {flag}: {v}"))
}

impl Config {
    pub fn from_args() -> Config {
        let mut cfg = Config::default();
        let mut args = std::env::args().skip(1);
        while let Some(a) = args.next() {
            match a.as_str() {
                "--seq" => cfg.seq_len = parse(&a, args.next()),
                "--dim" => cfg.head_dim = parse(&a, args.next()),
                "--seed" => cfg.seed = parse(&a, args.next()),
                "--tol" => cfg.tol = parse(&a, args.next()),
                "--batched" => cfg.batched = true,
                other => eprintln!("ignoring unknown argument {other:?}"),
            }
        }
        cfg
    }
}
