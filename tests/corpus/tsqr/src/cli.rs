//! Command-line options.

use std::fmt;

#[derive(Debug, Clone)]
pub struct Config {
    /// Global number of rows m of A.
    pub rows: usize,
    /// Number of columns k of A.
    pub cols: usize,
    /// Seed of the deterministic problem generator.
    pub seed: u64,
    /// Print per-rank details.
    pub verbose: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config { rows: 10_000, cols: 8, seed: 42, verbose: false }
    }
}

#[derive(Debug)]
pub struct CliError(String);

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CliError {}

const USAGE: &str = "usage: tsqr [--rows M] [--cols K] [--seed S] [--verbose]";

impl Config {
    pub fn from_args() -> Result<Config, CliError> {
        Self::parse(std::env::args().skip(1))
    }

    pub fn parse<I: Iterator<Item = String>>(mut args: I) -> Result<Config, CliError> {
        let mut cfg = Config::default();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--rows" => cfg.rows = number(&arg, args.next())?,
                "--cols" => cfg.cols = number(&arg, args.next())?,
                "--seed" => cfg.seed = number(&arg, args.next())?,
                "--verbose" | "-v" => cfg.verbose = true,
                "--help" | "-h" => return Err(CliError(USAGE.to_string())),
                other => return Err(CliError(format!("unknown argument `{other}`\n{USAGE}"))),
            }
        }
        if cfg.cols == 0 {
            return Err(CliError("--cols must be at least 1".into()));
        }
        if cfg.rows < cfg.cols {
            return Err(CliError(format!(
                "--rows ({}) must be at least --cols ({}) for a full-rank least-squares problem",
                cfg.rows, cfg.cols
            )));
        }
        Ok(cfg)
    }
}

fn number<T: std::str::FromStr>(flag: &str, value: Option<String>) -> Result<T, CliError> {
    let value = value.ok_or_else(|| CliError(format!("{flag} needs a value")))?;
    value.parse().map_err(|_| CliError(format!("{flag}: `{value}` is not a valid number")))
}
