//! Command-line configuration.

use std::fmt;

#[derive(Debug, Clone)]
pub struct Config {
    pub vertices: usize,
    pub avg_degree: usize,
    pub seed: u64,
    pub damping: f64,
    pub tol: f64,
    pub max_iters: usize,
    /// How many of the best vertices rank 0 reports.
    pub top: usize,
}

#[derive(Debug)]
pub enum AppError {
    Dist(dist_runtime::Error),
    Config(String),
    Mismatch(String),
}

impl fmt::Display for AppError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AppError::Dist(e) => write!(f, "communication failed: {e}"),
            AppError::Config(m) => write!(f, "bad arguments: {m}"),
            AppError::Mismatch(m) => write!(f, "result differs from serial: {m}"),
        }
    }
}

impl std::error::Error for AppError {}

impl From<dist_runtime::Error> for AppError {
    fn from(e: dist_runtime::Error) -> Self {
        AppError::Dist(e)
    }
}

fn parse<T: std::str::FromStr>(flag: &str, value: &str) -> Result<T, AppError> {
    value.parse().map_err(|_| AppError::Config(format!("cannot parse {flag} {value}")))
}

impl Config {
    pub fn from_args() -> Result<Config, AppError> {
        let mut cfg = Config { vertices: 1000, avg_degree: 6, seed: 7, damping: 0.85, tol: 1e-10, max_iters: 100, top: 5 };
        let args: Vec<String> = std::env::args().skip(1).collect();
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            let value = it.next().ok_or_else(|| AppError::Config(format!("{flag} needs a value")))?;
            match flag.as_str() {
                "--vertices" => cfg.vertices = parse(flag, value)?,
                "--degree" => cfg.avg_degree = parse(flag, value)?,
                "--seed" => cfg.seed = parse(flag, value)?,
                "--damping" => cfg.damping = parse(flag, value)?,
                "--tol" => cfg.tol = parse(flag, value)?,
                "--max-iters" => cfg.max_iters = parse(flag, value)?,
                "--top" => cfg.top = parse(flag, value)?,
                other => return Err(AppError::Config(format!("unknown flag {other}"))),
            }
        }
        if cfg.vertices == 0 {
            return Err(AppError::Config("--vertices must be positive".into()));
        }
        Ok(cfg)
    }
}
