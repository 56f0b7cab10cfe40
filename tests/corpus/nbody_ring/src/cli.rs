//! Command-line options for the N-body driver.

use std::fmt::Display;
use std::str::FromStr;

#[derive(Debug, Clone)]
pub struct Config {
    pub particles: usize,
    pub steps: usize,
    pub dt: f64,
    pub softening: f64,
    pub seed: u64,
    /// Use non-blocking isend/irecv for the ring shift instead of sendrecv.
    pub overlap: bool,
    pub verbose: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config { particles: 37, steps: 4, dt: 1e-3, softening: 0.05, seed: 2024, overlap: false, verbose: false }
    }
}

fn parse_value<T>(flag: &str, raw: Option<String>) -> Result<T, String>
where
    T: FromStr,
    T::Err: Display,
{
    let raw = raw.ok_or_else(|| format!("{flag} needs a value"))?;
    raw.parse::<T>().map_err(|e| format!("bad value {raw:?} for {flag}: {e}"))
}

impl Config {
    pub fn from_args(mut args: impl Iterator<Item = String>) -> Result<Config, String> {
        let mut cfg = Config::default();
        while let Some(flag) = args.next() {
            match flag.as_str() {
                "-p" | "--particles" => cfg.particles = parse_value(&flag, args.next())?,
                "-s" | "--steps" => cfg.steps = parse_value(&flag, args.next())?,
                "--dt" => cfg.dt = parse_value(&flag, args.next())?,
                "--softening" => cfg.softening = parse_value(&flag, args.next())?,
                "--seed" => cfg.seed = parse_value(&flag, args.next())?,
                "--overlap" => cfg.overlap = true,
                "-v" | "--verbose" => cfg.verbose = true,
                other => return Err(format!("unknown option {other:?}")),
            }
        }
        if cfg.particles == 0 {
            return Err("--particles must be at least 1".into());
        }
        if cfg.softening <= 0.0 {
            return Err("--softening must be positive".into());
        }
        Ok(cfg)
    }
}
