//! Flags: --steps N, --k N, --log-every N, --ckpt-every N, --lr X.

#[derive(Debug, Clone)]
pub struct Config {
    pub steps: usize,
    pub k: usize,
    pub log_every: usize,
    pub ckpt_every: usize,
    pub lr: f32,
}

impl Config {
    pub fn from_args() -> Result<Config, String> {
        let mut cfg = Config { steps: 10, k: 3, log_every: 5, ckpt_every: 4, lr: 0.05 };
        let mut args = std::env::args().skip(1);
        while let Some(flag) = args.next() {
            let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
            let bad = |e: String| format!("{flag} {value}: {e}");
            match flag.as_str() {
                "--steps" => cfg.steps = value.parse().map_err(|e: std::num::ParseIntError| bad(e.to_string()))?,
                "--k" => cfg.k = value.parse().map_err(|e: std::num::ParseIntError| bad(e.to_string()))?,
                "--log-every" => cfg.log_every = value.parse().map_err(|e: std::num::ParseIntError| bad(e.to_string()))?,
                "--ckpt-every" => cfg.ckpt_every = value.parse().map_err(|e: std::num::ParseIntError| bad(e.to_string()))?,
                "--lr" => cfg.lr = value.parse().map_err(|e: std::num::ParseFloatError| bad(e.to_string()))?,
                _ => return Err(format!("unknown flag {flag}")),
            }
        }
        if cfg.k == 0 || cfg.log_every == 0 || cfg.ckpt_every == 0 {
            return Err("--k, --log-every and --ckpt-every must be positive".into());
        }
        Ok(cfg)
    }
}
