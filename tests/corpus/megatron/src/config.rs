//! Run configuration: model/batch sizes and the parallel layout from argv.

#[derive(Debug, Clone)]
pub struct Config {
    pub tp: usize,
    pub pp: usize,
    pub steps: usize,
    pub micro_batches: usize,
    pub rows: usize,
    pub lr: f32,
    pub tol: f32,
}

impl Default for Config {
    fn default() -> Self {
        Config { tp: 1, pp: 1, steps: 2, micro_batches: 2, rows: 3, lr: 0.05, tol: 2e-4 }
    }
}

impl Config {
    /// `--tp K --pp P --steps N --micro M`; anything else is ignored.
    pub fn from_args() -> Config {
        let mut cfg = Config::default();
        let args: Vec<String> = std::env::args().skip(1).collect();
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            let slot = match flag.as_str() {
                "--tp" => &mut cfg.tp,
                "--pp" => &mut cfg.pp,
                "--steps" => &mut cfg.steps,
                "--micro" => &mut cfg.micro_batches,
                _ => continue,
            };
            let value = it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
            *slot = value.parse().unwrap_or_else(|_| panic!("{flag}: not a number: {value}"));
        }
        cfg
    }

    pub fn dp(&self, world: usize) -> usize {
        world / (self.tp * self.pp)
    }
}
