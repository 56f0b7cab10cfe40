//! Flags of the multigrid solver.

#[derive(Debug, Clone)]
pub struct Config {
    /// The fine grid has 2^levels intervals.
    pub levels: u32,
    /// Below this many points on some rank, the grid is agglomerated (or solved directly).
    pub agg_min: usize,
    /// How many ranks the agglomerated coarse problem lives on.
    pub coarse_ranks: usize,
    /// Pre- and post-smoothing sweeps.
    pub nu: usize,
    /// V-cycles of the coarse group per agglomerated solve.
    pub coarse_cycles: usize,
    pub tol: f64,
    pub max_cycles: usize,
}

impl Config {
    pub fn parse(args: &[String]) -> Result<Config, String> {
        let mut c = Config { levels: 8, agg_min: 4, coarse_ranks: 2, nu: 2, coarse_cycles: 2, tol: 1e-10, max_cycles: 40 };
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            let mut val = || it.next().ok_or_else(|| format!("{flag} needs a value"));
            let bad = |e: std::num::ParseIntError| format!("{flag}: {e}");
            match flag.as_str() {
                "--levels" => c.levels = val()?.parse().map_err(bad)?,
                "--agg-min" => c.agg_min = val()?.parse().map_err(bad)?,
                "--coarse-ranks" => c.coarse_ranks = val()?.parse().map_err(bad)?,
                "--nu" => c.nu = val()?.parse().map_err(bad)?,
                "--coarse-cycles" => c.coarse_cycles = val()?.parse().map_err(bad)?,
                "--max-cycles" => c.max_cycles = val()?.parse().map_err(bad)?,
                "--tol" => c.tol = val()?.parse().map_err(|e| format!("--tol: {e}"))?,
                _ => return Err(format!("unknown flag {flag}")),
            }
        }
        if c.agg_min == 0 || c.coarse_ranks == 0 {
            return Err("--agg-min and --coarse-ranks must be at least 1".into());
        }
        Ok(c)
    }
}
