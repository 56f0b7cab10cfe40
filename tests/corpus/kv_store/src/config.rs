//! `--ops 40 --rounds 5 --keys 64 --seed 7 --mix read-heavy --report-rank 0`;
//! `--ops` falls back to `KV_OPS`.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mix { ReadHeavy, Balanced, WriteHeavy }

impl Mix {
    /// Percentages of (get, put); the rest are deletes.
    pub fn split(self) -> (u64, u64) {
        match self {
            Mix::ReadHeavy => (70, 20),
            Mix::Balanced => (40, 40),
            Mix::WriteHeavy => (15, 70),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Config {
    /// Most operations one rank issues in one round (the count varies per round).
    pub max_ops: usize,
    pub rounds: usize, pub keys: u64, pub seed: u64, pub mix: Mix, pub report_rank: usize,
}

impl Config {
    pub fn parse() -> Result<Config, String> {
        let mut cfg = Config {
            max_ops: std::env::var("KV_OPS").ok().and_then(|v| v.parse().ok()).unwrap_or(32),
            rounds: 4,
            keys: 50,
            seed: 1,
            mix: Mix::Balanced,
            report_rank: 0,
        };
        let args: Vec<String> = std::env::args().skip(1).collect();
        let mut i = 0;
        while i < args.len() {
            let value = args.get(i + 1).ok_or_else(|| format!("{} needs a value", args[i]))?;
            let bad = |_| format!("{}: bad value `{value}`", args[i]);
            match args[i].as_str() {
                "--ops" => cfg.max_ops = value.parse().map_err(bad)?,
                "--rounds" => cfg.rounds = value.parse().map_err(bad)?,
                "--keys" => cfg.keys = value.parse().map_err(bad)?,
                "--seed" => cfg.seed = value.parse().map_err(bad)?,
                "--report-rank" => cfg.report_rank = value.parse().map_err(bad)?,
                "--mix" => {
                    cfg.mix = match value.as_str() {
                        "read-heavy" => Mix::ReadHeavy,
                        "balanced" => Mix::Balanced,
                        "write-heavy" => Mix::WriteHeavy,
                        other => return Err(format!("unknown mix `{other}`")),
                    }
                }
                other => return Err(format!("unknown flag `{other}`")),
            }
            i += 2;
        }
        (cfg.keys > 0).then_some(cfg).ok_or_else(|| "--keys must be positive".into())
    }
}
