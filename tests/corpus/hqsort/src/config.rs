//! Command-line configuration for the sort.

use std::fmt;

/// How the keys are distributed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyDist {
    Uniform,
    /// Most keys in a narrow band: stresses pivot choice and imbalance.
    Skewed,
    /// Many repeated keys.
    Duplicates,
}

/// How each sub-cube picks its pivot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PivotRule {
    /// The sub-cube's rank 0 broadcasts its local median (classic hyperquicksort).
    RootMedian,
    /// Median of all ranks' local medians (all_gather).
    MedianOfMedians,
}

#[derive(Debug, Clone)]
pub struct Config {
    pub per_rank: usize,
    pub seed: u64,
    pub dist: KeyDist,
    pub pivot: PivotRule,
    /// Print per-level balance information.
    pub verbose: bool,
}

#[derive(Debug)]
pub struct ConfigError(String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bad arguments: {}", self.0)
    }
}
impl std::error::Error for ConfigError {}

impl Config {
    pub fn from_args<I: IntoIterator<Item = String>>(args: I) -> Result<Config, ConfigError> {
        let mut cfg = Config { per_rank: 1000, seed: 7, dist: KeyDist::Uniform, pivot: PivotRule::RootMedian, verbose: false };
        let mut it = args.into_iter();
        while let Some(a) = it.next() {
            let mut value = |name: &str| it.next().ok_or_else(|| ConfigError(format!("{name} needs a value")));
            match a.as_str() {
                "--per-rank" | "-n" => {
                    cfg.per_rank = value("--per-rank")?.parse().map_err(|e| ConfigError(format!("--per-rank: {e}")))?
                }
                "--seed" => cfg.seed = value("--seed")?.parse().map_err(|e| ConfigError(format!("--seed: {e}")))?,
                "--dist" => {
                    cfg.dist = match value("--dist")?.as_str() {
                        "uniform" => KeyDist::Uniform,
                        "skewed" => KeyDist::Skewed,
                        "dups" => KeyDist::Duplicates,
                        other => return Err(ConfigError(format!("unknown --dist {other}"))),
                    }
                }
                "--pivot" => {
                    cfg.pivot = match value("--pivot")?.as_str() {
                        "root" => PivotRule::RootMedian,
                        "mom" => PivotRule::MedianOfMedians,
                        other => return Err(ConfigError(format!("unknown --pivot {other}"))),
                    }
                }
                "-v" | "--verbose" => cfg.verbose = true,
                other => return Err(ConfigError(format!("unknown flag {other}"))),
            }
        }
        Ok(cfg)
    }
}
