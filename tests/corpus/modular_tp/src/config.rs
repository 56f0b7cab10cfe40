//! Command line (`--tp K`, `--config PATH`, or `TP` in the environment) and the
//! `key = value` hyper-parameter file.

use std::fmt::Display;
use std::fs;
use std::path::{Path, PathBuf};

/// Training hyper-parameters. Every rank reads the same file, so they agree.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub steps: usize,
    pub lr: f32,
    pub batch: usize,
    pub micro_batches: usize,
    pub eval_every: usize,
    pub patience: usize,
    pub seed: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config { steps: 30, lr: 0.1, batch: 48, micro_batches: 2, eval_every: 3, patience: 2, seed: 7 }
    }
}

fn bad_value(path: &Path, line: usize, key: &str, e: impl Display) -> String {
    format!("{}:{}: bad value for `{key}`: {e}", path.display(), line + 1)
}

impl Config {
    /// Reads `key = value` lines (`#` starts a comment); keys not given keep their default.
    pub fn from_file(path: &Path) -> Result<Config, String> {
        let text = fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let mut cfg = Config::default();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let (key, value) = line
                .split_once('=')
                .map(|(k, v)| (k.trim(), v.trim()))
                .ok_or_else(|| format!("{}:{}: expected `key = value`, got `{raw}`", path.display(), i + 1))?;
            match key {
                "steps" => cfg.steps = value.parse().map_err(|e| bad_value(path, i, key, e))?,
                "lr" => cfg.lr = value.parse().map_err(|e| bad_value(path, i, key, e))?,
                "batch" => cfg.batch = value.parse().map_err(|e| bad_value(path, i, key, e))?,
                "micro_batches" => cfg.micro_batches = value.parse().map_err(|e| bad_value(path, i, key, e))?,
                "eval_every" => cfg.eval_every = value.parse().map_err(|e| bad_value(path, i, key, e))?,
                "patience" => cfg.patience = value.parse().map_err(|e| bad_value(path, i, key, e))?,
                "seed" => cfg.seed = value.parse().map_err(|e| bad_value(path, i, key, e))?,
                other => return Err(format!("{}:{}: unknown key `{other}`", path.display(), i + 1)),
            }
        }
        if cfg.micro_batches == 0 || cfg.eval_every == 0 || cfg.batch == 0 {
            return Err(format!("{}: batch, micro_batches and eval_every must be positive", path.display()));
        }
        Ok(cfg)
    }
}

/// What the command line asked for.
#[derive(Debug)]
pub struct Args {
    pub tp: usize,
    pub config: Config,
}

impl Args {
    pub fn parse() -> Result<Args, String> {
        let mut tp: Option<usize> = match std::env::var("TP") {
            Ok(v) => Some(v.parse().map_err(|e| format!("TP={v}: {e}"))?),
            Err(_) => None,
        };
        let mut config_path: Option<PathBuf> = None;
        let mut args = std::env::args().skip(1);
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--tp" => {
                    let v = args.next().ok_or("--tp needs a value")?;
                    tp = Some(v.parse().map_err(|e| format!("--tp {v}: {e}"))?);
                }
                "--config" => config_path = Some(args.next().ok_or("--config needs a path")?.into()),
                other => return Err(format!("unknown argument `{other}` (expected --tp K, --config PATH)")),
            }
        }
        let config = match config_path {
            Some(p) => Config::from_file(&p)?,
            None => Config::default(),
        };
        let tp = tp.unwrap_or(1);
        if tp == 0 {
            return Err("--tp must be at least 1".into());
        }
        Ok(Args { tp, config })
    }
}
