//! Training configuration, read from the command line.

/// Hyper-parameters of one training run.
#[derive(Debug, Clone)]
pub struct Config {
    /// Widths of the MLP: `dims[0]` inputs, `dims[last]` outputs.
    pub dims: Vec<usize>,
    /// Optimizer steps.
    pub steps: usize,
    /// Micro-batches accumulated per optimizer step.
    pub accum: usize,
    /// Rows in one (global) micro-batch.
    pub rows: usize,
    pub lr: f64,
    pub momentum: f64,
    /// Maximum global gradient norm, if clipping is on.
    pub clip: Option<f64>,
    pub seed: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            dims: vec![7, 13, 9, 3],
            steps: 4,
            accum: 1,
            rows: 10,
            lr: 0.05,
            momentum: 0.9,
            clip: None,
            seed: 17,
        }
    }
}

impl Config {
    pub fn from_args() -> Result<Config, String> {
        let mut cfg = Config::default();
        let args: Vec<String> = std::env::args().skip(1).collect();
        let mut i = 0;
        while i < args.len() {
            match args[i].as_str() {
                "--steps" => {
                    cfg.steps = value(&args, i)?;
                    i += 1;
                }
                "--accum" => {
                    cfg.accum = value(&args, i)?;
                    i += 1;
                }
                "--rows" => {
                    cfg.rows = value(&args, i)?;
                    i += 1;
                }
                "--lr" => {
                    cfg.lr = value(&args, i)?;
                    i += 1;
                }
                "--clip" => {
                    // `--clip` alone uses a small default norm, so clipping really happens.
                    match args.get(i + 1).and_then(|s| s.parse::<f64>().ok()) {
                        Some(v) => {
                            cfg.clip = Some(v);
                            i += 1;
                        }
                        None => cfg.clip = Some(0.05),
                    }
                }
                other => return Err(format!("unknown argument `{other}`")),
            }
            i += 1;
        }
        if cfg.accum == 0 {
            return Err("--accum must be at least 1".into());
        }
        Ok(cfg)
    }
}

fn value<T: std::str::FromStr>(args: &[String], i: usize) -> Result<T, String> {
    args.get(i + 1)
        .ok_or_else(|| format!("{} needs a value", args[i]))?
        .parse()
        .map_err(|_| format!("bad value for {}", args[i]))
}
