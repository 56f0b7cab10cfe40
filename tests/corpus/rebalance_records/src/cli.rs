//! Command-line flags: `--records N --max-len N --seed N`.

use std::fmt;

#[derive(Clone, Debug)]
pub struct Config {
    /// Base number of records each rank generates (each rank adds up to 10% more).
    pub records: usize,
    /// Longest payload, in u32 words (payloads are 0..=max_len words).
    pub max_len: usize,
    pub seed: u64,
}

#[derive(Debug)]
pub struct CliError(String);

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bad command line: {}", self.0)
    }
}

impl std::error::Error for CliError {}

impl Config {
    pub fn from_args() -> Result<Config, CliError> {
        let mut cfg = Config { records: 500, max_len: 9, seed: 7 };
        let args: Vec<String> = std::env::args().skip(1).collect();
        let mut i = 0;
        while i < args.len() {
            let flag = args[i].as_str();
            let value = args
                .get(i + 1)
                .ok_or_else(|| CliError(format!("{flag} needs a value")))?;
            let parse = |v: &str| -> Result<u64, CliError> {
                v.parse::<u64>().map_err(|e| CliError(format!("{flag} {v}: {e}")))
            };
            match flag {
                "--records" => cfg.records = parse(value)? as usize,
                "--max-len" => cfg.max_len = parse(value)? as usize,
                "--seed" => cfg.seed = parse(value)?,
                other => return Err(CliError(format!("unknown flag {other}"))),
            }
            i += 2;
        }
        Ok(cfg)
    }
}
