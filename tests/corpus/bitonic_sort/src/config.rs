//! Command-line flags.

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Algo {
    OddEven,
    Bitonic,
    /// Bitonic where the world size is a power of two, odd-even elsewhere.
    Auto,
}

#[derive(Debug, Clone)]
pub struct Config {
    pub keys: usize,
    pub seed: u64,
    pub range: i64,
    pub algo: Algo,
}

impl Config {
    pub fn from_args() -> Result<Config, String> {
        let mut cfg = Config { keys: 10_000, seed: 1, range: 1 << 40, algo: Algo::Auto };
        let args: Vec<String> = std::env::args().skip(1).collect();
        for pair in args.chunks(2) {
            let (flag, value) = match pair {
                [f, v] => (f.as_str(), v.as_str()),
                [f] => return Err(format!("{f} needs a value")),
                _ => unreachable!(),
            };
            let num = |what: &str| value.parse::<u64>().map_err(|e| format!("{what} {value}: {e}"));
            match flag {
                "--keys" => cfg.keys = num("--keys")? as usize,
                "--seed" => cfg.seed = num("--seed")?,
                "--range" => cfg.range = num("--range")?.max(1) as i64,
                "--algo" => {
                    cfg.algo = match value {
                        "oddeven" => Algo::OddEven,
                        "bitonic" => Algo::Bitonic,
                        "auto" => Algo::Auto,
                        other => return Err(format!("unknown --algo {other}")),
                    }
                }
                other => return Err(format!("unknown flag {other}")),
            }
        }
        Ok(cfg)
    }
}
