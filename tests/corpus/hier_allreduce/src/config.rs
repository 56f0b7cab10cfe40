//! Command-line and environment configuration.

use std::str::FromStr;

#[derive(Clone, Debug)]
pub struct Config {
    pub steps: usize,
    pub accum: usize,
    pub micro: usize,
    pub local_size: usize,
    pub flat: bool,
    pub lr: f64,
    pub hidden: usize,
    pub report_every: usize,
    pub stop_loss: Option<f64>,
    pub seed: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            steps: 20,
            accum: 2,
            micro: 8,
            local_size: 2,
            flat: false,
            lr: 0.05,
            hidden: 8,
            report_every: 5,
            stop_loss: None,
            seed: 42,
        }
    }
}

fn parse<T: FromStr>(flag: &str, v: Option<&String>) -> Result<T, String> {
    let v = v.ok_or_else(|| format!("{flag} needs a value"))?;
    v.parse::<T>().map_err(|_| format!("{flag}: cannot parse {v:?}"))
}

impl Config {
    /// Reads `LOCAL_SIZE` from the environment, then the flags (flags win).
    pub fn from_env_and_args(args: &[String]) -> Result<Config, String> {
        let mut cfg = Config::default();
        if let Ok(v) = std::env::var("LOCAL_SIZE") {
            cfg.local_size = v.trim().parse().map_err(|_| format!("LOCAL_SIZE={v:?} is not a number"))?;
        }
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            match flag.as_str() {
                "--steps" => cfg.steps = parse(flag, it.next())?,
                "--accum" => cfg.accum = parse(flag, it.next())?,
                "--micro" => cfg.micro = parse(flag, it.next())?,
                "--local-size" => cfg.local_size = parse(flag, it.next())?,
                "--lr" => cfg.lr = parse(flag, it.next())?,
                "--hidden" => cfg.hidden = parse(flag, it.next())?,
                "--report-every" => cfg.report_every = parse(flag, it.next())?,
                "--stop-loss" => cfg.stop_loss = Some(parse(flag, it.next())?),
                "--seed" => cfg.seed = parse(flag, it.next())?,
                "--flat" => cfg.flat = true,
                other => return Err(format!("unknown flag {other}")),
            }
        }
        if cfg.accum == 0 || cfg.micro == 0 || cfg.report_every == 0 {
            return Err("--accum, --micro and --report-every must be positive".into());
        }
        Ok(cfg)
    }

    /// The node size actually used: falls back to 1 when it does not divide the world.
    pub fn effective_local_size(&self, world_size: usize) -> usize {
        if self.local_size == 0 || world_size % self.local_size != 0 {
            1
        } else {
            self.local_size
        }
    }
}
