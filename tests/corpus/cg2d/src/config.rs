//! Command-line configuration for the CG solver.

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HaloMode {
    /// All four directions posted as one batch.
    Batch,
    /// Blocking send/recv ordered by parity of the coordinate.
    Ordered,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DotMode {
    /// One all_reduce over the world.
    Flat,
    /// Reduce along rows, then along columns of the process grid.
    TwoStage,
}

#[derive(Debug, Clone)]
pub struct Config {
    pub nx: usize,
    pub ny: usize,
    pub px: Option<usize>,
    pub py: Option<usize>,
    pub max_iter: usize,
    pub tol: f64,
    pub halo: HaloMode,
    pub dot: DotMode,
    pub verbose: bool,
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
        Config {
            nx: 24,
            ny: 20,
            px: None,
            py: None,
            max_iter: 500,
            tol: 1e-8,
            halo: HaloMode::Batch,
            dot: DotMode::Flat,
            verbose: false,
        }
    }
}

fn num<T: std::str::FromStr>(flag: &str, v: Option<String>) -> Result<T, ConfigError> {
    let v = v.ok_or_else(|| ConfigError(format!("{flag} needs a value")))?;
    v.parse().map_err(|_| ConfigError(format!("{flag}: cannot parse {v:?}")))
}

impl Config {
    pub fn from_args(args: impl IntoIterator<Item = String>) -> Result<Config, ConfigError> {
        let mut c = Config::default();
        let mut it = args.into_iter();
        while let Some(a) = it.next() {
            match a.as_str() {
                "--nx" => c.nx = num(&a, it.next())?,
                "--ny" => c.ny = num(&a, it.next())?,
                "--px" => c.px = Some(num(&a, it.next())?),
                "--py" => c.py = Some(num(&a, it.next())?),
                "--iters" => c.max_iter = num(&a, it.next())?,
                "--tol" => c.tol = num(&a, it.next())?,
                "--halo" => {
                    c.halo = match it.next().as_deref() {
                        Some("batch") => HaloMode::Batch,
                        Some("ordered") => HaloMode::Ordered,
                        other => return Err(ConfigError(format!("--halo: unknown mode {other:?}"))),
                    }
                }
                "--dot" => {
                    c.dot = match it.next().as_deref() {
                        Some("flat") => DotMode::Flat,
                        Some("two-stage") => DotMode::TwoStage,
                        other => return Err(ConfigError(format!("--dot: unknown mode {other:?}"))),
                    }
                }
                "-v" | "--verbose" => c.verbose = true,
                other => return Err(ConfigError(format!("unknown flag {other}"))),
            }
        }
        Ok(c)
    }

    /// The process grid (px columns × py rows) for `size` ranks: the flags if given,
    /// else the most square factorisation with px ≥ py.
    pub fn process_grid(&self, size: usize) -> Result<(usize, usize), ConfigError> {
        let (px, py) = match (self.px, self.py) {
            (Some(px), Some(py)) => (px, py),
            (Some(px), None) => (px, size / px.max(1)),
            (None, Some(py)) => (size / py.max(1), py),
            (None, None) => {
                let py = (1..=size).filter(|d| size % d == 0 && d * d <= size).max().unwrap_or(1);
                (size / py, py)
            }
        };
        if px * py != size {
            return Err(ConfigError(format!("grid {px} x {py} does not match {size} ranks")));
        }
        if px > self.nx || py > self.ny {
            return Err(ConfigError(format!("grid {px} x {py} is finer than the mesh {} x {}", self.nx, self.ny)));
        }
        Ok((px, py))
    }
}
