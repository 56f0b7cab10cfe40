//! Flags.

#[derive(Debug, Clone)]
pub struct Config {
    pub n: usize,
    pub seed: u64,
    pub tol: f64,
}

impl Config {
    pub fn from_args() -> Result<Config, String> {
        let mut cfg = Config { n: 12, seed: 3, tol: 1e-9 };
        let args: Vec<String> = std::env::args().collect();
        let mut i = 1;
        while i < args.len() {
            let value = args.get(i + 1).ok_or_else(|| format!("{} needs a value", args[i]))?;
            match args[i].as_str() {
                "--n" => cfg.n = value.parse().map_err(|e| format!("--n {value}: {e}"))?,
                "--seed" => cfg.seed = value.parse().map_err(|e| format!("--seed {value}: {e}"))?,
                "--tol" => cfg.tol = value.parse().map_err(|e| format!("--tol {value}: {e}"))?,
                other => return Err(format!("unknown flag {other}")),
            }
            i += 2;
        }
        if cfg.n == 0 {
            return Err("--n must be positive".to_string());
        }
        Ok(cfg)
    }
}
