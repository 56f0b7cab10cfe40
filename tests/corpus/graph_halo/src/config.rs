//! Options: `--vertices V --chords C --alpha A --tol T --max-iter M --check-every K`.

#[derive(Debug, Clone)]
pub struct Config {
    pub vertices: usize,
    /// Extra random edges per vertex, beyond the ring.
    pub chords: usize,
    /// Diagonal shift: the system is (alpha·I + L) x = b.
    pub alpha: f64,
    pub tol: f64,
    pub max_iter: usize,
    pub check_every: usize,
    pub seed: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config { vertices: 203, chords: 2, alpha: 0.5, tol: 1e-10, max_iter: 2000, check_every: 5, seed: 99 }
    }
}

impl Config {
    pub fn from_args() -> Result<Config, String> {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let mut cfg = Config::default();
        for pair in args.chunks(2) {
            let (flag, val) = match pair {
                [f, v] => (f.as_str(), v.as_str()),
                [f] => return Err(format!("{f} needs a value")),
                _ => unreachable!(),
            };
            let num = |v: &str| v.parse::<usize>().map_err(|e| format!("{flag}: {e}"));
            match flag {
                "--vertices" => cfg.vertices = num(val)?,
                "--chords" => cfg.chords = num(val)?,
                "--max-iter" => cfg.max_iter = num(val)?,
                "--check-every" => cfg.check_every = num(val)?.max(1),
                "--seed" => cfg.seed = num(val)? as u64,
                "--alpha" => cfg.alpha = val.parse().map_err(|e| format!("{flag}: {e}"))?,
                "--tol" => cfg.tol = val.parse().map_err(|e| format!("{flag}: {e}"))?,
                _ => return Err(format!("unknown option {flag}")),
            }
        }
        if cfg.vertices < 3 {
            return Err("need at least 3 vertices".into());
        }
        Ok(cfg)
    }
}
