//! Training configuration from the command line.

#[derive(Clone, Debug)]
pub struct Config {
    /// Rows in the whole data set (split over the ranks).
    pub rows: usize,
    /// Features per row.
    pub features: usize,
    /// Rows per micro-batch.
    pub batch: usize,
    /// Micro-batches whose gradients are accumulated into one step.
    pub accum: usize,
    /// Local steps between parameter averages.
    pub sync_every: usize,
    pub max_steps: usize,
    pub lr: f64,
    /// Stop once the global mean squared error falls below this.
    pub target_loss: f64,
    pub seed: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            rows: 2048,
            features: 8,
            batch: 16,
            accum: 2,
            sync_every: 4,
            max_steps: 400,
            lr: 0.05,
            target_loss: 0.011,
            seed: 42,
        }
    }
}

fn num<T: std::str::FromStr>(flag: &str, it: &mut impl Iterator<Item = String>) -> Result<T, String>
where
    T::Err: std::fmt::Display,
{
    let raw = it.next().ok_or(format!("missing value after {flag}"))?;
    raw.parse::<T>().map_err(|e| format!("bad value {raw:?} for {flag}: {e}"))
}

impl Config {
    pub fn from_env_args() -> Result<Config, String> {
        let mut cfg = Config::default();
        let mut it = std::env::args().skip(1);
        while let Some(flag) = it.next() {
            match flag.as_str() {
                "--rows" => cfg.rows = num(&flag, &mut it)?,
                "--features" => cfg.features = num(&flag, &mut it)?,
                "--batch" => cfg.batch = num(&flag, &mut it)?,
                "--accum" => cfg.accum = num(&flag, &mut it)?,
                "--sync-every" => cfg.sync_every = num(&flag, &mut it)?,
                "--max-steps" => cfg.max_steps = num(&flag, &mut it)?,
                "--lr" => cfg.lr = num(&flag, &mut it)?,
                "--target-loss" => cfg.target_loss = num(&flag, &mut it)?,
                "--seed" => cfg.seed = num(&flag, &mut it)?,
                _ => return Err(format!("unknown flag {flag}")),
            }
        }
        if cfg.batch == 0 || cfg.accum == 0 || cfg.sync_every == 0 {
            return Err("--batch, --accum and --sync-every must be positive".into());
        }
        Ok(cfg)
    }
}
