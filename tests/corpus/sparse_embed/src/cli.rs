//! Command-line flags with defaults.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Ids, rows and gradients move by all_to_all_v.
    AllToAll,
    /// Ids, rows and gradients move by isend/irecv to the owners actually needed.
    PointToPoint,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptimKind {
    Sgd,
    Adagrad,
}

#[derive(Debug, Clone)]
pub struct Config {
    pub rows: usize,
    pub dim: usize,
    /// Samples each rank draws per step.
    pub batch: usize,
    pub steps: usize,
    pub lr: f32,
    pub seed: u64,
    pub mode: Mode,
    pub optim: OptimKind,
    /// Print the loss from rank 0 every this many steps (0: never).
    pub log_every: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            rows: 97,
            dim: 8,
            batch: 24,
            steps: 30,
            lr: 0.5,
            seed: 2024,
            mode: Mode::AllToAll,
            optim: OptimKind::Adagrad,
            log_every: 0,
        }
    }
}

impl Config {
    pub fn parse(mut args: impl Iterator<Item = String>) -> Result<Config, String> {
        fn num<T: std::str::FromStr>(flag: &str, v: Option<String>) -> Result<T, String> {
            let v = v.ok_or_else(|| format!("{flag}: missing value"))?;
            v.parse().map_err(|_| format!("{flag}: not a number: {v}"))
        }
        let mut c = Config::default();
        while let Some(flag) = args.next() {
            match flag.as_str() {
                "--rows" => c.rows = num(&flag, args.next())?,
                "--dim" => c.dim = num(&flag, args.next())?,
                "--batch" => c.batch = num(&flag, args.next())?,
                "--steps" => c.steps = num(&flag, args.next())?,
                "--lr" => c.lr = num(&flag, args.next())?,
                "--seed" => c.seed = num(&flag, args.next())?,
                "--log-every" => c.log_every = num(&flag, args.next())?,
                "--p2p" => c.mode = Mode::PointToPoint,
                "--sgd" => c.optim = OptimKind::Sgd,
                "--adagrad" => c.optim = OptimKind::Adagrad,
                _ => return Err(format!("unknown flag {flag}")),
            }
        }
        if c.rows == 0 || c.dim == 0 || c.rows > u32::MAX as usize {
            return Err("--rows and --dim must be positive (and rows fit in u32)".into());
        }
        Ok(c)
    }
}
