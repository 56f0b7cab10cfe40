//! Command-line options of the sweep.

use std::fmt;

/// Run parameters, the same on every rank (parsed from the same argv).
#[derive(Debug, Clone)]
pub struct Config {
    /// Process-grid columns; `None`: chosen from the world size.
    pub px: Option<usize>,
    /// Discrete ordinates per octant.
    pub angles: usize,
    /// Local cells per rank in x and y.
    pub nx: usize,
    pub ny: usize,
    /// Source iterations.
    pub iters: usize,
    /// Save and restore a sharded checkpoint after the solve.
    pub checkpoint: bool,
}

#[derive(Debug)]
pub struct ConfigError(pub String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bad command line: {}", self.0)
    }
}

impl std::error::Error for ConfigError {}

impl Default for Config {
    fn default() -> Self {
        Config { px: None, angles: 4, nx: 6, ny: 5, iters: 3, checkpoint: false }
    }
}

fn number(flag: &str, value: Option<String>) -> Result<usize, ConfigError> {
    let v = value.ok_or_else(|| ConfigError(format!("{flag} needs a value")))?;
    let n: usize = v.parse().map_err(|_| ConfigError(format!("{flag} {v}: not a number")))?;
    if n == 0 {
        return Err(ConfigError(format!("{flag} must be positive")));
    }
    Ok(n)
}

impl Config {
    /// Parses `--px N --angles N --nx N --ny N --iters N --checkpoint`.
    pub fn from_args() -> Result<Config, ConfigError> {
        let mut cfg = Config::default();
        let mut args = std::env::args().skip(1);
        while let Some(a) = args.next() {
            match a.as_str() {
                "--px" => cfg.px = Some(number("--px", args.next())?),
                "--angles" => cfg.angles = number("--angles", args.next())?,
                "--nx" => cfg.nx = number("--nx", args.next())?,
                "--ny" => cfg.ny = number("--ny", args.next())?,
                "--iters" => cfg.iters = number("--iters", args.next())?,
                "--checkpoint" => cfg.checkpoint = true,
                other => return Err(ConfigError(format!("unknown argument `{other}`"))),
            }
        }
        Ok(cfg)
    }
}

/// Process-grid columns for `n` ranks when `--px` is not given: the grid closest to
/// square, with at least as many columns as rows.
pub fn default_px(n: usize) -> usize {
    let mut rows = 1;
    let mut d = 1;
    while d * d <= n {
        if n % d == 0 {
            rows = d;
        }
        d += 1;
    }
    n / rows
}
