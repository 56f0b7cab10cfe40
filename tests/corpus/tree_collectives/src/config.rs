//! Command-line options.

pub struct Config {
    pub dim: usize,
    pub rows: usize,
    pub rounds: usize,
    pub local_steps: usize,
    pub lr: f64,
    /// World rank that initialises the parameters (taken modulo the world size).
    pub root: usize,
    pub seed: u64,
}

impl Config {
    pub fn from_args() -> Result<Config, String> {
        let mut cfg = Config { dim: 12, rows: 20, rounds: 6, local_steps: 3, lr: 0.05, root: 0, seed: 17 };
        let args: Vec<String> = std::env::args().skip(1).collect();
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
            let bad = |_| format!("bad value {value:?} for {flag}");
            match flag.as_str() {
                "--dim" => cfg.dim = value.parse().map_err(bad)?,
                "--rows" => cfg.rows = value.parse().map_err(bad)?,
                "--rounds" => cfg.rounds = value.parse().map_err(bad)?,
                "--local-steps" => cfg.local_steps = value.parse().map_err(bad)?,
                "--root" => cfg.root = value.parse().map_err(bad)?,
                "--seed" => cfg.seed = value.parse().map_err(bad)?,
                "--lr" => cfg.lr = value.parse().map_err(|_| format!("bad value {value:?} for --lr"))?,
                other => return Err(format!("unknown argument {other}")),
            }
        }
        Ok(cfg)
    }
}
