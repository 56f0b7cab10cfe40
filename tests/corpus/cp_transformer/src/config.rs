//! Training options. The context-parallel degree comes from `--cp`, else the
//! `CP_DEGREE` environment variable, else 2 on an even world and 1 otherwise.

#[derive(Debug, Clone)]
pub struct Config {
    pub cp: Option<usize>,
    pub seq: usize,
    pub dim: usize,
    pub steps: usize,
    pub lr: f64,
    pub clip: f64,
    /// Early stopping: stop after `patience` evaluations without a `min_delta` gain.
    pub eval_every: usize,
    pub patience: usize,
    pub min_delta: f64,
    pub seed: u64,
    pub verbose: bool,
}

impl Config {
    pub fn from_env_and_args() -> Result<Config, String> {
        let mut cfg = Config { cp: None, seq: 29, dim: 6, steps: 80, lr: 1.0, clip: 0.1, eval_every: 4, patience: 3, min_delta: 1e-4, seed: 17, verbose: false };
        cfg.cp = std::env::var("CP_DEGREE").ok().and_then(|v| v.parse().ok());
        let mut args = std::env::args().skip(1);
        while let Some(flag) = args.next() {
            if flag == "--verbose" {
                cfg.verbose = true;
                continue;
            }
            let val = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
            let bad = || format!("{flag}: cannot parse {val:?}");
            match flag.as_str() {
                "--cp" => cfg.cp = Some(val.parse().map_err(|_| bad())?),
                "--seq" => cfg.seq = val.parse().map_err(|_| bad())?,
                "--dim" => cfg.dim = val.parse().map_err(|_| bad())?,
                "--steps" => cfg.steps = val.parse().map_err(|_| bad())?,
                "--lr" => cfg.lr = val.parse().map_err(|_| bad())?,
                "--clip" => cfg.clip = val.parse().map_err(|_| bad())?,
                "--eval-every" => cfg.eval_every = val.parse::<usize>().map_err(|_| bad())?.max(1),
                "--patience" => cfg.patience = val.parse().map_err(|_| bad())?,
                "--seed" => cfg.seed = val.parse().map_err(|_| bad())?,
                _ => return Err(format!("unknown option {flag}")),
            }
        }
        Ok(cfg)
    }

    /// (dp, cp) for `world` ranks: cp as asked, or the largest divisor of the world below it.
    pub fn mesh_shape(&self, world: usize) -> (usize, usize) {
        let want = self.cp.unwrap_or(if world % 2 == 0 { 2 } else { 1 }).clamp(1, world);
        let cp = (1..=want).rev().find(|c| world % c == 0).unwrap_or(1);
        (world / cp, cp)
    }
}

/// Items `[n·r/parts, n·(r+1)/parts)` belong to part r.
pub fn block(n: usize, parts: usize, r: usize) -> std::ops::Range<usize> {
    (n * r / parts)..(n * (r + 1) / parts)
}
