//! A small hand-written command-line parser: `--iters N --len N --dim N --seed N
//! --lr X --momentum X --per-node N --flat`.

use std::fmt;
use std::str::FromStr;

/// What the trainer is asked to do.
#[derive(Debug, Clone)]
pub struct Config {
    /// Full-batch gradient steps.
    pub iters: usize,
    /// Samples in the whole (global) data set.
    pub len: usize,
    /// Features per sample, the bias column included.
    pub dim: usize,
    /// Seed of the data and of the initial weights.
    pub seed: u64,
    /// Learning rate.
    pub lr: f64,
    /// Momentum coefficient; 0 selects plain SGD.
    pub momentum: f64,
    /// Ranks per "node" of the hierarchical reducer.
    pub per_node: usize,
    /// Reduce over the world directly instead of node by node.
    pub flat: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config { iters: 60, len: 2000, dim: 8, seed: 7, lr: 0.8, momentum: 0.5, per_node: 2, flat: false }
    }
}

/// A command line that cannot be understood.
#[derive(Debug)]
pub enum ArgError {
    MissingValue(String),
    BadValue { flag: String, value: String },
    Unknown(String),
    Invalid(String),
}

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArgError::MissingValue(flag) => write!(f, "{flag} needs a value"),
            ArgError::BadValue { flag, value } => write!(f, "{flag}: cannot parse {value:?}"),
            ArgError::Unknown(flag) => write!(f, "unknown flag {flag:?}"),
            ArgError::Invalid(why) => write!(f, "invalid configuration: {why}"),
        }
    }
}

impl std::error::Error for ArgError {}

fn value<T: FromStr, I: Iterator<Item = String>>(it: &mut I, flag: &str) -> Result<T, ArgError> {
    let raw = it.next().ok_or_else(|| ArgError::MissingValue(flag.to_string()))?;
    raw.parse().map_err(|_| ArgError::BadValue { flag: flag.to_string(), value: raw })
}

impl Config {
    /// Parses the flags after the program name.
    pub fn from_args<I: IntoIterator<Item = String>>(args: I) -> Result<Config, ArgError> {
        let mut cfg = Config::default();
        let mut it = args.into_iter();
        while let Some(flag) = it.next() {
            match flag.as_str() {
                "--iters" => cfg.iters = value(&mut it, &flag)?,
                "--len" => cfg.len = value(&mut it, &flag)?,
                "--dim" => cfg.dim = value(&mut it, &flag)?,
                "--seed" => cfg.seed = value(&mut it, &flag)?,
                "--lr" => cfg.lr = value(&mut it, &flag)?,
                "--momentum" => cfg.momentum = value(&mut it, &flag)?,
                "--per-node" => cfg.per_node = value(&mut it, &flag)?,
                "--flat" => cfg.flat = true,
                _ => return Err(ArgError::Unknown(flag)),
            }
        }
        cfg.validate()?;
        Ok(cfg)
    }

    fn validate(&self) -> Result<(), ArgError> {
        if self.dim < 2 {
            return Err(ArgError::Invalid(format!("--dim {} leaves no feature beside the bias", self.dim)));
        }
        if self.per_node == 0 {
            return Err(ArgError::Invalid("--per-node must be at least 1".into()));
        }
        if !(0.0..1.0).contains(&self.momentum) {
            return Err(ArgError::Invalid(format!("--momentum {} is not in [0, 1)", self.momentum)));
        }
        Ok(())
    }
}
