//! Run configuration: defaults, a builder, and the command line on top.

#[derive(Clone, Debug)]
pub struct ExchangeConfig {
    pub seed: u64,
    /// Keys each rank starts with.
    pub keys_per_rank: usize,
    /// Histogram bins used to pick the splitters.
    pub bins: usize,
    /// Side of the square matrix to transpose.
    pub matrix: usize,
    /// Times each exchange is repeated (and timed).
    pub reps: usize,
}

impl Default for ExchangeConfig {
    fn default() -> Self {
        ExchangeConfig { seed: 42, keys_per_rank: 5000, bins: 1024, matrix: 64, reps: 3 }
    }
}

impl ExchangeConfig {
    pub fn seed(mut self, s: u64) -> Self {
        self.seed = s;
        self
    }
    pub fn keys_per_rank(mut self, k: usize) -> Self {
        self.keys_per_rank = k;
        self
    }
    pub fn bins(mut self, b: usize) -> Self {
        self.bins = b.next_power_of_two().max(2);
        self
    }
    pub fn matrix(mut self, m: usize) -> Self {
        self.matrix = m;
        self
    }
    pub fn reps(mut self, r: usize) -> Self {
        self.reps = r.max(1);
        self
    }

    pub fn from_args(args: impl IntoIterator<Item = String>) -> Result<Self, String> {
        let mut cfg = ExchangeConfig::default();
        let mut args = args.into_iter();
        while let Some(flag) = args.next() {
            let v: usize = args
                .next()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("{flag} needs a non-negative integer"))?;
            cfg = match flag.as_str() {
                "--seed" => cfg.seed(v as u64),
                "--keys" => cfg.keys_per_rank(v),
                "--bins" => cfg.bins(v),
                "--matrix" => cfg.matrix(v),
                "--reps" => cfg.reps(v),
                _ => return Err(format!("unknown flag {flag}")),
            };
        }
        Ok(cfg)
    }
}
