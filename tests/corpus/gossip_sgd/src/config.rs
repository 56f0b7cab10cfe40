//! Flags for the gossip SGD run.

use crate::gossip::Schedule;

#[derive(Debug, Clone)]
pub struct Config {
    pub dim: usize,
    pub samples: usize,
    pub max_steps: usize,
    pub lr: f64,
    pub schedule: Schedule,
    /// Every this many steps: a global consensus check (all_reduce).
    pub check_every: usize,
    /// Stop once the global mean loss is below this.
    pub tol: f64,
    pub seed: u64,
    pub noise: f64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            dim: 8,
            samples: 64,
            max_steps: 400,
            lr: 0.05,
            schedule: Schedule::Hypercube,
            check_every: 10,
            tol: 1e-3,
            seed: 1,
            noise: 0.01,
        }
    }
}

fn parse<T: std::str::FromStr>(flag: &str, v: Option<String>) -> Result<T, String>
where
    T::Err: std::fmt::Display,
{
    let v = v.ok_or_else(|| format!("{flag} needs a value"))?;
    v.parse().map_err(|e| format!("{flag} {v}: {e}"))
}

impl Config {
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Config, String> {
        let mut c = Config::default();
        let mut args = args.into_iter();
        while let Some(flag) = args.next() {
            match flag.as_str() {
                "--dim" => c.dim = parse(&flag, args.next())?,
                "--samples" => c.samples = parse(&flag, args.next())?,
                "--steps" => c.max_steps = parse(&flag, args.next())?,
                "--lr" => c.lr = parse(&flag, args.next())?,
                "--check-every" => c.check_every = parse(&flag, args.next())?,
                "--tol" => c.tol = parse(&flag, args.next())?,
                "--seed" => c.seed = parse(&flag, args.next())?,
                "--noise" => c.noise = parse(&flag, args.next())?,
                "--schedule" => {
                    let s: String = parse(&flag, args.next())?;
                    c.schedule = s.parse()?;
                }
                _ => return Err(format!("unknown flag {flag}")),
            }
        }
        if c.check_every == 0 {
            return Err("--check-every must be at least 1".into());
        }
        Ok(c)
    }
}
