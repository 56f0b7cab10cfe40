//! Flags: --records N (per rank), --keys N, --seed N, --node-size N.

use std::collections::HashMap;

#[derive(Debug, Clone)]
pub struct Config {
    pub records: usize,
    pub keys: u64,
    pub seed: u64,
    pub node_size: usize,
}

impl Config {
    pub fn parse(args: impl Iterator<Item = String>) -> Result<Config, String> {
        let args: Vec<String> = args.collect();
        let mut flags: HashMap<String, String> = HashMap::new();
        for pair in args.chunks(2) {
            match pair {
                [k, v] if k.starts_with("--") => {
                    flags.insert(k.trim_start_matches("--").to_string(), v.clone());
                }
                _ => return Err(format!("expected `--flag value` pairs, got {pair:?}")),
            }
        }
        let get = |name: &str, default: u64| -> Result<u64, String> {
            match flags.get(name) {
                Some(v) => v.parse().map_err(|e| format!("--{name} {v}: {e}")),
                None => Ok(default),
            }
        };
        let cfg = Config {
            records: get("records", 40)? as usize,
            keys: get("keys", 13)?,
            seed: get("seed", 1)?,
            node_size: get("node-size", 2)? as usize,
        };
        if cfg.node_size == 0 || cfg.keys == 0 {
            return Err("--node-size and --keys must be positive".into());
        }
        Ok(cfg)
    }
}
