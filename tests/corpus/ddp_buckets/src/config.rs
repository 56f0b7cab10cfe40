//! Command-line configuration, parsed the same way on every rank.

use std::str::FromStr;

#[derive(Debug, Clone)]
pub struct Config {
    pub hidden: usize,
    /// Rows in one global micro-batch (split across the ranks).
    pub batch: usize,
    /// Micro-batches accumulated before each optimizer step.
    pub accum: usize,
    pub steps_per_epoch: usize,
    pub max_epochs: usize,
    /// Epochs without a `min_delta` (relative) improvement of the validation loss.
    pub patience: usize,
    pub min_delta: f64,
    /// Bucket capacity in KiB of f64 gradients.
    pub bucket_kb: usize,
    pub lr: f64,
    pub val_rows: usize,
    pub seed: u64,
}

fn parse<T: FromStr>(flag: &str, value: Option<String>) -> Result<T, String> {
    let value = value.ok_or_else(|| format!("{flag} needs a value"))?;
    value.parse().map_err(|_| format!("bad value {value:?} for {flag}"))
}

impl Config {
    pub fn from_args() -> Result<Config, String> {
        let mut cfg = Config {
            hidden: 24, batch: 16, accum: 2, steps_per_epoch: 4, max_epochs: 40, patience: 3,
            min_delta: 1e-3, bucket_kb: 2, lr: 0.05, val_rows: 37, seed: 5,
        };
        let mut args = std::env::args().skip(1);
        while let Some(flag) = args.next() {
            match flag.as_str() {
                "--hidden" => cfg.hidden = parse(&flag, args.next())?,
                "--batch" => cfg.batch = parse(&flag, args.next())?,
                "--accum" => cfg.accum = parse(&flag, args.next())?,
                "--steps" => cfg.steps_per_epoch = parse(&flag, args.next())?,
                "--epochs" => cfg.max_epochs = parse(&flag, args.next())?,
                "--patience" => cfg.patience = parse(&flag, args.next())?,
                "--min-delta" => cfg.min_delta = parse(&flag, args.next())?,
                "--bucket-kb" => cfg.bucket_kb = parse(&flag, args.next())?,
                "--lr" => cfg.lr = parse(&flag, args.next())?,
                "--val" => cfg.val_rows = parse(&flag, args.next())?,
                "--seed" => cfg.seed = parse(&flag, args.next())?,
                other => return Err(format!("unknown argument {other}")),
            }
        }
        if cfg.batch == 0 || cfg.accum == 0 || cfg.val_rows == 0 {
            return Err("--batch, --accum and --val must be positive".into());
        }
        Ok(cfg)
    }

    /// Rows consumed by one epoch.
    pub fn rows_per_epoch(&self) -> usize {
        self.steps_per_epoch * self.accum * self.batch
    }
}
