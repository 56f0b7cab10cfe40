//! `--rows N --cols N --nnz N --seed N --iters N --mode a2a|p2p|both`.

use std::fmt;
use std::str::FromStr;

/// How the nonzeros travel to their new owners.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Counts by all_to_all, payloads by all_to_all_v.
    AllToAll,
    /// Counts by all_to_all, payloads by pairwise sendrecv.
    Pairwise,
    /// Both, and check that they agree.
    Both,
}

impl FromStr for Mode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "a2a" | "alltoall" => Ok(Mode::AllToAll),
            "p2p" | "pairwise" => Ok(Mode::Pairwise),
            "both" => Ok(Mode::Both),
            _ => Err(format!("unknown mode {s:?} (a2a, p2p, both)")),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Config {
    pub rows: usize,
    pub cols: usize,
    /// Average nonzeros per row.
    pub nnz: usize,
    pub seed: u64,
    /// Products y = Aᵀx with different x.
    pub iters: usize,
    pub mode: Mode,
}

impl Default for Config {
    fn default() -> Self {
        Config { rows: 1000, cols: 777, nnz: 6, seed: 42, iters: 3, mode: Mode::Both }
    }
}

#[derive(Debug)]
pub struct ArgError(pub String);

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ArgError {}

fn next_value<T: FromStr>(args: &mut impl Iterator<Item = String>, flag: &str) -> Result<T, ArgError> {
    let v = args.next().ok_or_else(|| ArgError(format!("{flag} needs a value")))?;
    v.parse().map_err(|_| ArgError(format!("{flag}: bad value {v:?}")))
}

impl Mode {
    fn code(self) -> u64 {
        match self {
            Mode::AllToAll => 0,
            Mode::Pairwise => 1,
            Mode::Both => 2,
        }
    }

    fn from_code(c: u64) -> Result<Mode, ArgError> {
        match c {
            0 => Ok(Mode::AllToAll),
            1 => Ok(Mode::Pairwise),
            2 => Ok(Mode::Both),
            _ => Err(ArgError(format!("mode code {c} on the wire"))),
        }
    }
}

impl Config {
    /// Length of the wire form that rank 0 broadcasts.
    pub const WORDS: usize = 6;

    pub fn to_words(&self) -> Vec<u64> {
        vec![self.rows as u64, self.cols as u64, self.nnz as u64, self.seed, self.iters as u64, self.mode.code()]
    }

    pub fn from_words(w: &[u64]) -> Result<Config, ArgError> {
        if w.len() != Self::WORDS {
            return Err(ArgError(format!("{} words for a configuration of {}", w.len(), Self::WORDS)));
        }
        Ok(Config {
            rows: w[0] as usize,
            cols: w[1] as usize,
            nnz: w[2] as usize,
            seed: w[3],
            iters: w[4] as usize,
            mode: Mode::from_code(w[5])?,
        })
    }
}

pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Config, ArgError> {
    let mut cfg = Config::default();
    let mut args = args.into_iter();
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--rows" | "--len" => cfg.rows = next_value(&mut args, &flag)?,
            "--cols" => cfg.cols = next_value(&mut args, &flag)?,
            "--nnz" => cfg.nnz = next_value(&mut args, &flag)?,
            "--seed" => cfg.seed = next_value(&mut args, &flag)?,
            "--iters" => cfg.iters = next_value(&mut args, &flag)?,
            "--mode" => {
                let v: String = next_value(&mut args, &flag)?;
                cfg.mode = v.parse().map_err(ArgError)?;
            }
            other => return Err(ArgError(format!("unknown flag {other:?}"))),
        }
    }
    if cfg.cols == 0 {
        return Err(ArgError("--cols must be positive".into()));
    }
    Ok(cfg)
}
