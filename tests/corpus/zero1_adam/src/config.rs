//! Command-line flags: `--steps N --lr X --hidden H --rows R --clip C`.

use std::fmt;

#[derive(Debug, Clone)]
pub struct Config {
    pub steps: usize,
    pub lr: f64,
    pub hidden: usize,
    pub rows: usize,
    pub features: usize,
    pub clip: f64,
    pub seed: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config { steps: 20, lr: 0.01, hidden: 7, rows: 53, features: 5, clip: 0.25, seed: 42 }
    }
}

#[derive(Debug)]
pub struct ArgError(pub String);

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bad arguments: {}", self.0)
    }
}

impl std::error::Error for ArgError {}

fn value<T: std::str::FromStr>(flag: &str, v: Option<String>) -> Result<T, ArgError> {
    let v = v.ok_or_else(|| ArgError(format!("{flag} needs a value")))?;
    v.parse().map_err(|_| ArgError(format!("{flag}: cannot parse {v:?}")))
}

impl Config {
    pub fn from_args() -> Result<Config, ArgError> {
        let mut cfg = Config::default();
        let mut args = std::env::args().skip(1);
        while let Some(a) = args.next() {
            match a.as_str() {
                "--steps" => cfg.steps = value("--steps", args.next())?,
                "--lr" => cfg.lr = value("--lr", args.next())?,
                "--hidden" => cfg.hidden = value("--hidden", args.next())?,
                "--rows" => cfg.rows = value("--rows", args.next())?,
                "--clip" => cfg.clip = value("--clip", args.next())?,
                "--seed" => cfg.seed = value("--seed", args.next())?,
                other => return Err(ArgError(format!("unknown flag {other}"))),
            }
        }
        if cfg.hidden == 0 || cfg.rows == 0 {
            return Err(ArgError("--hidden and --rows must be positive".into()));
        }
        Ok(cfg)
    }
}
