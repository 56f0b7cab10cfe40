//! `--records R --vocab V --topk K --seed S --skew X`, with defaults.

#[derive(Debug, Clone)]
pub struct Config {
    /// Records per rank (rank r makes `records + (7r mod 5)` of them).
    pub records: usize,
    /// Distinct words the generator draws from.
    pub vocab: usize,
    pub topk: usize,
    pub seed: u64,
    /// Larger: more skewed toward the first words.
    pub skew: f64,
}

impl Default for Config {
    fn default() -> Self {
        Config { records: 500, vocab: 97, topk: 10, seed: 2024, skew: 2.0 }
    }
}

impl Config {
    pub fn from_args() -> Result<Config, String> {
        let mut cfg = Config::default();
        let args: Vec<String> = std::env::args().skip(1).collect();
        let mut i = 0;
        while i < args.len() {
            let key = args[i].trim_start_matches("--").to_string();
            let val = args.get(i + 1).ok_or_else(|| format!("--{key} needs a value"))?;
            let bad = |_| format!("--{key}: bad value {val:?}");
            match key.as_str() {
                "records" => cfg.records = val.parse().map_err(bad)?,
                "vocab" => cfg.vocab = val.parse().map_err(bad)?,
                "topk" => cfg.topk = val.parse().map_err(bad)?,
                "seed" => cfg.seed = val.parse().map_err(bad)?,
                "skew" => cfg.skew = val.parse().map_err(|_| format!("--skew: bad value {val:?}"))?,
                _ => return Err(format!("unknown option --{key}")),
            }
            i += 2;
        }
        if cfg.vocab == 0 || cfg.topk == 0 {
            return Err("--vocab and --topk must be positive".into());
        }
        Ok(cfg)
    }

    pub fn records_on(&self, rank: usize) -> usize {
        self.records + (7 * rank) % 5
    }
}
