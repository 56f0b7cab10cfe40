//! Command-line configuration for the replica-exchange run.

use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Metropolis sweeps per replica.
    pub sweeps: usize,
    /// Attempt neighbour swaps after every `swap_every` sweeps.
    pub swap_every: usize,
    /// Spins in each periodic Ising chain.
    pub spins: usize,
    /// Master seed; every stream is derived from it.
    pub seed: u64,
    /// Coldest and hottest inverse temperatures of the ladder.
    pub beta_max: f64,
    pub beta_min: f64,
    /// Coupling and external field.
    pub coupling: f64,
    pub field: f64,
    /// Print per-replica statistics on rank 0.
    pub verbose: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            sweeps: 200,
            swap_every: 10,
            spins: 24,
            seed: 0x5eed_1234,
            beta_max: 1.0,
            beta_min: 0.5,
            coupling: 1.0,
            field: 0.15,
            verbose: false,
        }
    }
}

#[derive(Debug)]
pub struct ConfigError(pub String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bad arguments: {}", self.0)
    }
}

impl std::error::Error for ConfigError {}

fn parse_value<T: std::str::FromStr>(flag: &str, raw: Option<String>) -> Result<T, ConfigError> {
    let raw = raw.ok_or_else(|| ConfigError(format!("{flag} needs a value")))?;
    raw.parse::<T>().map_err(|_| ConfigError(format!("{flag}: cannot parse {raw:?}")))
}

impl Config {
    /// Parses `--flag value` and `--flag=value` pairs (the program name excluded).
    pub fn from_args<I: IntoIterator<Item = String>>(args: I) -> Result<Config, ConfigError> {
        let mut cfg = Config::default();
        let mut it = args.into_iter();
        while let Some(arg) = it.next() {
            let (flag, inline) = match arg.split_once('=') {
                Some((f, v)) => (f.to_string(), Some(v.to_string())),
                None => (arg.clone(), None),
            };
            let mut value = || inline.clone().or_else(|| it.next());
            match flag.as_str() {
                "--sweeps" => cfg.sweeps = parse_value(&flag, value())?,
                "--swap-every" => cfg.swap_every = parse_value(&flag, value())?,
                "--spins" => cfg.spins = parse_value(&flag, value())?,
                "--seed" => cfg.seed = parse_value(&flag, value())?,
                "--beta-max" => cfg.beta_max = parse_value(&flag, value())?,
                "--beta-min" => cfg.beta_min = parse_value(&flag, value())?,
                "--coupling" => cfg.coupling = parse_value(&flag, value())?,
                "--field" => cfg.field = parse_value(&flag, value())?,
                "--verbose" | "-v" => cfg.verbose = true,
                other => return Err(ConfigError(format!("unknown flag {other:?}"))),
            }
        }
        cfg.validate()?;
        Ok(cfg)
    }

    pub fn from_env() -> Result<Config, ConfigError> {
        Config::from_args(std::env::args().skip(1))
    }

    fn validate(&self) -> Result<(), ConfigError> {
        if self.swap_every == 0 {
            return Err(ConfigError("--swap-every must be at least 1".into()));
        }
        if self.spins < 3 {
            return Err(ConfigError("--spins must be at least 3".into()));
        }
        if !(self.beta_min > 0.0 && self.beta_max >= self.beta_min) {
            return Err(ConfigError("need 0 < --beta-min <= --beta-max".into()));
        }
        Ok(())
    }

    /// The inverse temperature of ladder slot `slot` of `slots` (geometric ladder,
    /// slot 0 coldest).
    pub fn beta(&self, slot: usize, slots: usize) -> f64 {
        if slots == 1 {
            return self.beta_max;
        }
        let t = slot as f64 / (slots - 1) as f64;
        self.beta_max * (self.beta_min / self.beta_max).powf(t)
    }
}
