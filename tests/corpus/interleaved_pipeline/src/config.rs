//! `--micro 8 --chunks 2 --batch 3 --dim 6 --in-dim 5 --steps 3 --lr 0.05 --seed 11`;
//! `--micro` falls back to `PIPE_MICRO`.

#[derive(Clone, Debug)]
pub struct Config {
    pub micro: usize, pub chunks: usize, pub batch: usize, pub dim: usize, pub in_dim: usize,
    pub steps: usize, pub lr: f64, pub seed: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config { micro: 4, chunks: 1, batch: 3, dim: 6, in_dim: 6, steps: 3, lr: 0.05, seed: 11 }
    }
}

impl Config {
    pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Config, String> {
        let mut cfg = Config::default();
        if let Some(m) = std::env::var("PIPE_MICRO").ok().and_then(|v| v.parse().ok()) {
            cfg.micro = m;
        }
        let mut in_dim = None;
        let mut it = args.into_iter();
        while let Some(flag) = it.next() {
            let value = it.next().ok_or_else(|| format!("{flag}: missing value"))?;
            let int = || value.parse::<usize>().map_err(|e| format!("{flag} {value}: {e}"));
            match flag.as_str() {
                "--micro" => cfg.micro = int()?,
                "--chunks" => cfg.chunks = int()?,
                "--batch" => cfg.batch = int()?,
                "--dim" => cfg.dim = int()?,
                "--in-dim" => in_dim = Some(int()?),
                "--steps" => cfg.steps = int()?,
                "--seed" => cfg.seed = int()? as u64,
                "--lr" => cfg.lr = value.parse().map_err(|e| format!("--lr {value}: {e}"))?,
                _ => return Err(format!("unknown flag {flag}")),
            }
        }
        cfg.in_dim = in_dim.unwrap_or(cfg.dim);
        if cfg.chunks == 0 || cfg.micro == 0 {
            return Err("--chunks and --micro must be positive".into());
        }
        Ok(cfg)
    }
}
