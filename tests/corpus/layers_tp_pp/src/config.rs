//! Command-line flags: `--tp N`, `--pp N`, `--steps N`, `--lr X`.

#[derive(Debug, Clone)]
pub struct Config {
    pub tp: usize,
    pub pp: usize,
    pub steps: usize,
    pub lr: f32,
}

impl Default for Config {
    fn default() -> Self {
        Config { tp: 1, pp: 1, steps: 4, lr: 0.1 }
    }
}

impl Config {
    pub fn from_args() -> Result<Config, String> {
        let mut cfg = Config::default();
        let args: Vec<String> = std::env::args().skip(1).collect();
        let mut i = 0;
        while i < args.len() {
            let flag = args[i].as_str();
            let value = args.get(i + 1).ok_or_else(|| format!("{flag} needs a value"))?;
            match flag {
                "--tp" => cfg.tp = value.parse().map_err(|e| format!("--tp {value}: {e}"))?,
                "--pp" => cfg.pp = value.parse().map_err(|e| format!("--pp {value}: {e}"))?,
                "--steps" => cfg.steps = value.parse().map_err(|e| format!("--steps {value}: {e}"))?,
                "--lr" => cfg.lr = value.parse().map_err(|e| format!("--lr {value}: {e}"))?,
                other => return Err(format!("unknown flag {other}")),
            }
            i += 2;
        }
        Ok(cfg)
    }
}
