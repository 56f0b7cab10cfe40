//! `--rounds R --base B --seed S --target T --policy midpoint|start --quiet`

use crate::items::Policy;

pub struct Opts {
    pub rounds: usize,
    pub base: usize,
    pub seed: u64,
    /// Stop once max load / mean load is at most this (0 = always run every round).
    pub target: f64,
    pub quiet: bool,
    pub policy: Policy,
}

pub fn from_args() -> Result<Opts, String> {
    let mut o = Opts { rounds: 3, base: 20, seed: 1, target: 0.0, quiet: false, policy: Policy::Midpoint };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut k = 0;
    while k < args.len() {
        let next = || args.get(k + 1).ok_or_else(|| format!("{} needs a value", args[k]));
        match args[k].as_str() {
            "--rounds" => o.rounds = next()?.parse().map_err(|e| format!("--rounds: {e}"))?,
            "--base" => o.base = next()?.parse().map_err(|e| format!("--base: {e}"))?,
            "--seed" => o.seed = next()?.parse().map_err(|e| format!("--seed: {e}"))?,
            "--target" => o.target = next()?.parse().map_err(|e| format!("--target: {e}"))?,
            "--policy" => o.policy = next()?.parse()?,
            "--quiet" => {
                o.quiet = true;
                k += 1;
                continue;
            }
            other => return Err(format!("unknown argument {other}")),
        }
        k += 2;
    }
    Ok(o)
}
