//! `histogram_stats [--root R] [--bins B] [--per-rank N] [--tail Q] [--top K] [--seed S]`

#[derive(Debug, Clone)]
pub struct Args {
    pub root: usize,
    pub bins: usize,
    pub per_rank: usize,
    pub tail: f64,
    pub top: usize,
    pub seed: u64,
}

const USAGE: &str = "histogram_stats [--root R] [--bins B] [--per-rank N] [--tail Q] [--top K] [--seed S]";

impl Args {
    pub fn parse() -> Result<Args, String> {
        Self::parse_from(std::env::args().skip(1).collect())
    }

    pub fn parse_from(argv: Vec<String>) -> Result<Args, String> {
        let mut a = Args { root: 0, bins: 48, per_rank: 400, tail: 0.03, top: 4, seed: 99 };
        let mut i = 0;
        while i < argv.len() {
            let flag = argv[i].as_str();
            if flag == "-h" || flag == "--help" {
                return Err(USAGE.to_string());
            }
            let val = argv.get(i + 1).ok_or_else(|| format!("{flag} expects a value\n{USAGE}"))?;
            let bad = |e: &dyn std::fmt::Display| format!("{flag} {val}: {e}");
            match flag {
                "--root" => a.root = val.parse().map_err(|e| bad(&e))?,
                "--bins" => a.bins = val.parse().map_err(|e| bad(&e))?,
                "--per-rank" => a.per_rank = val.parse().map_err(|e| bad(&e))?,
                "--tail" => a.tail = val.parse().map_err(|e| bad(&e))?,
                "--top" => a.top = val.parse().map_err(|e| bad(&e))?,
                "--seed" => a.seed = val.parse().map_err(|e| bad(&e))?,
                _ => return Err(format!("unknown flag {flag}\n{USAGE}")),
            }
            i += 2;
        }
        if a.bins < 2 {
            return Err("--bins must be at least 2".into());
        }
        if !(0.0..0.5).contains(&a.tail) {
            return Err("--tail must be in [0, 0.5)".into());
        }
        Ok(a)
    }
}
