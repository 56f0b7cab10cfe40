//! Command-line flags of the k-means run.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Init {
    /// The first k points of rank 0.
    First,
    /// The first k − 1 points of rank 0 and one point far from the data, so that
    /// its cluster starts empty and the repair path runs.
    Far,
}

#[derive(Debug, Clone)]
pub struct Config {
    pub k: usize,
    pub points: usize,
    pub dim: usize,
    pub max_iter: usize,
    pub tol: f64,
    pub seed: u64,
    pub init: Init,
    pub gather: bool,
    pub verbose: bool,
}

impl Config {
    pub fn from_args() -> Result<Config, String> {
        let mut c = Config {
            k: 4,
            points: 240,
            dim: 3,
            max_iter: 50,
            tol: 1e-10,
            seed: 7,
            init: Init::Far,
            gather: true,
            verbose: false,
        };
        let args: Vec<String> = std::env::args().skip(1).collect();
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            let mut value = || it.next().cloned().ok_or(format!("{flag} needs a value"));
            match flag.as_str() {
                "-k" | "--k" => c.k = value()?.parse().map_err(|_| "bad -k")?,
                "--points" => c.points = value()?.parse().map_err(|_| "bad --points")?,
                "--dim" => c.dim = value()?.parse().map_err(|_| "bad --dim")?,
                "--iters" => c.max_iter = value()?.parse().map_err(|_| "bad --iters")?,
                "--seed" => c.seed = value()?.parse().map_err(|_| "bad --seed")?,
                "--init" => {
                    c.init = match value()?.as_str() {
                        "first" => Init::First,
                        "far" => Init::Far,
                        other => return Err(format!("--init: unknown {other}")),
                    }
                }
                "--no-gather" => c.gather = false,
                "-v" => c.verbose = true,
                other => return Err(format!("unknown flag {other}")),
            }
        }
        if c.k == 0 || c.dim == 0 {
            return Err("k and dim must be positive".into());
        }
        Ok(c)
    }
}
