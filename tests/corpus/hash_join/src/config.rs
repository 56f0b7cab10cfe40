//! Command-line flags.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// R ⋈ S on key: every matching (key, r.payload, s.payload).
    Join,
    /// SELECT key, COUNT(*), SUM(val) FROM S GROUP BY key.
    GroupBy,
}

#[derive(Debug, Clone)]
pub struct Config {
    pub mode: Mode,
    pub rows_r: usize,
    pub rows_s: usize,
    pub key_range: u64,
    pub seed: u64,
    /// Pre-aggregate locally before the shuffle (group-by only).
    pub combine: bool,
}

impl Config {
    pub fn from_args(args: &[String]) -> Result<Config, String> {
        let mut cfg = Config { mode: Mode::Join, rows_r: 200, rows_s: 300, key_range: 150, seed: 42, combine: false };
        let mut i = 0;
        while i < args.len() {
            let flag = args[i].as_str();
            let val = args.get(i + 1).cloned();
            let num = |v: Option<String>| -> Result<u64, String> {
                v.ok_or(format!("{flag} needs a value"))?.parse::<u64>().map_err(|e| format!("{flag}: {e}"))
            };
            match flag {
                "--mode" => {
                    cfg.mode = match val.as_deref() {
                        Some("join") => Mode::Join,
                        Some("groupby") => Mode::GroupBy,
                        other => return Err(format!("--mode: expected join or groupby, got {other:?}")),
                    };
                    i += 1;
                }
                "--rows-r" => { cfg.rows_r = num(val)? as usize; i += 1; }
                "--rows-s" => { cfg.rows_s = num(val)? as usize; i += 1; }
                "--keys" => { cfg.key_range = num(val)?.max(1); i += 1; }
                "--seed" => { cfg.seed = num(val)?; i += 1; }
                "--combine" => cfg.combine = true,
                _ => return Err(format!("unknown flag {flag}")),
            }
            i += 1;
        }
        Ok(cfg)
    }
}
