//! `--tokens 96 --experts 6 --dim 8 --capacity 1.25 --policy passthrough --act tanh`;
//! `--tokens` falls back to `MOE_TOKENS`.

use std::collections::HashMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropPolicy {
    /// A dropped token leaves the layer as it came in (the residual path).
    Passthrough,
    /// A dropped token's output is zero.
    Zero,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activation { Tanh, Relu }

#[derive(Clone, Debug)]
pub struct Config {
    pub tokens: usize, pub experts: usize, pub dim: usize,
    /// Capacity factor: each expert takes at most ceil(factor · tokens / experts) tokens.
    pub capacity: f64,
    pub seed: u64, pub policy: DropPolicy, pub act: Activation,
}

impl Config {
    pub fn from_args(args: impl Iterator<Item = String>) -> Result<Config, String> {
        let args: Vec<String> = args.collect();
        let flags: HashMap<&str, &str> = args
            .chunks(2)
            .map(|kv| match kv {
                [k, v] if k.starts_with("--") => Ok((&k[2..], v.as_str())),
                _ => Err(format!("expected `--flag value`, got {kv:?}")),
            })
            .collect::<Result<_, _>>()?;
        let get = |k: &str| flags.get(k).copied();
        let parse_or = |k: &str, d: &str| -> Result<f64, String> {
            get(k).unwrap_or(d).parse::<f64>().map_err(|e| format!("--{k}: {e}"))
        };
        let env_tokens = std::env::var("MOE_TOKENS").unwrap_or_else(|_| "64".into());
        let cfg = Config {
            tokens: get("tokens").unwrap_or(&env_tokens).parse().map_err(|e| format!("--tokens: {e}"))?,
            experts: parse_or("experts", "4")? as usize,
            dim: parse_or("dim", "8")? as usize,
            capacity: parse_or("capacity", "1.0")?,
            seed: parse_or("seed", "3")? as u64,
            policy: match get("policy").unwrap_or("passthrough") {
                "passthrough" => DropPolicy::Passthrough,
                "zero" => DropPolicy::Zero,
                p => return Err(format!("unknown drop policy `{p}`")),
            },
            act: match get("act").unwrap_or("tanh") {
                "tanh" => Activation::Tanh,
                "relu" => Activation::Relu,
                a => return Err(format!("unknown activation `{a}`")),
            },
        };
        if cfg.experts == 0 || cfg.dim == 0 {
            return Err("--experts and --dim must be positive".into());
        }
        Ok(cfg)
    }
}
