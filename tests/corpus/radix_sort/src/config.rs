//! Flags of the distributed radix sort.

use std::fmt;

#[derive(Debug, Clone)]
pub struct Config {
    pub keys_per_rank: usize,
    pub bits_per_pass: u32,
    /// Keys are drawn below 2^key_bits.
    pub key_bits: u32,
    pub seed: u64,
    /// Give ranks slightly different key counts (the default), as real shards are.
    pub uneven: bool,
    pub verbose: bool,
}

#[derive(Debug)]
pub struct UsageError(String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "usage error: {}", self.0)
    }
}

impl std::error::Error for UsageError {}

impl Default for Config {
    fn default() -> Self {
        Config { keys_per_rank: 20_000, bits_per_pass: 8, key_bits: 32, seed: 42, uneven: true, verbose: false }
    }
}

impl Config {
    pub fn parse(args: &[String]) -> Result<Config, UsageError> {
        let mut cfg = Config::default();
        let mut i = 0;
        while i < args.len() {
            let flag = args[i].as_str();
            let mut take = || -> Result<&str, UsageError> {
                i += 1;
                args.get(i).map(String::as_str).ok_or_else(|| UsageError(format!("{flag} expects a value")))
            };
            match flag {
                "--keys-per-rank" => cfg.keys_per_rank = num(flag, take()?)?,
                "--bits-per-pass" => cfg.bits_per_pass = num(flag, take()?)?,
                "--key-bits" => cfg.key_bits = num(flag, take()?)?,
                "--seed" => cfg.seed = num(flag, take()?)?,
                "--even" => cfg.uneven = false,
                "--verbose" => cfg.verbose = true,
                "-h" | "--help" => {
                    return Err(UsageError(
                        "radix_sort [--keys-per-rank N] [--bits-per-pass B] [--key-bits K] [--seed S] [--even] [--verbose]".into(),
                    ))
                }
                _ => return Err(UsageError(format!("unknown argument {flag:?}"))),
            }
            i += 1;
        }
        if !(1..=16).contains(&cfg.bits_per_pass) {
            return Err(UsageError(format!("--bits-per-pass must be in 1..=16, got {}", cfg.bits_per_pass)));
        }
        if !(1..=32).contains(&cfg.key_bits) {
            return Err(UsageError(format!("--key-bits must be in 1..=32, got {}", cfg.key_bits)));
        }
        if cfg.keys_per_rank == 0 {
            return Err(UsageError("--keys-per-rank must be positive".into()));
        }
        Ok(cfg)
    }

    pub fn from_env() -> Result<Config, UsageError> {
        let args: Vec<String> = std::env::args().skip(1).collect();
        Config::parse(&args)
    }

    /// How many keys rank `rank` holds (before and after the sort).
    pub fn keys_on(&self, rank: usize) -> usize {
        if self.uneven {
            self.keys_per_rank + (rank * 37) % 11
        } else {
            self.keys_per_rank
        }
    }

    /// Passes needed for keys of `key_bits` bits.
    pub fn passes(&self) -> u32 {
        self.key_bits.div_ceil(self.bits_per_pass)
    }

    pub fn key_mask(&self) -> u32 {
        if self.key_bits == 32 {
            u32::MAX
        } else {
            (1u32 << self.key_bits) - 1
        }
    }
}

fn num<T: std::str::FromStr>(flag: &str, raw: &str) -> Result<T, UsageError> {
    raw.parse().map_err(|_| UsageError(format!("{flag}: {raw:?} is not a number")))
}
