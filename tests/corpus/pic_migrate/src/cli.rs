//! `--particles P --steps S [--seed X] [--verbose]`

#[derive(Debug, Clone)]
pub struct Options {
    pub particles: usize,
    pub steps: usize,
    pub seed: u64,
    pub verbose: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options { particles: 1000, steps: 50, seed: 1, verbose: false }
    }
}

pub fn parse_args() -> Result<Options, String> {
    let mut opts = Options::default();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let next = |i: usize| args.get(i + 1).ok_or_else(|| format!("{} expects a value", args[i]));
        match args[i].as_str() {
            "--particles" | "-p" => {
                opts.particles = next(i)?.parse().map_err(|e| format!("--particles: {e}"))?;
                i += 1;
            }
            "--steps" | "-s" => {
                opts.steps = next(i)?.parse().map_err(|e| format!("--steps: {e}"))?;
                i += 1;
            }
            "--seed" => {
                opts.seed = next(i)?.parse().map_err(|e| format!("--seed: {e}"))?;
                i += 1;
            }
            "--verbose" => opts.verbose = true,
            flag => return Err(format!("unknown argument {flag:?} (flags: --particles P --steps S --seed X --verbose)")),
        }
        i += 1;
    }
    Ok(opts)
}
