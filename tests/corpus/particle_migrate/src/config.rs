//! Command-line options.

use std::str::FromStr;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Boundary {
    Periodic,
    Reflect,
}

/// How the final particles reach rank 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GatherMode {
    /// Counts first, then `gather_v` of the packed f64 records.
    Packed,
    /// `gather_object` of tuples.
    Object,
}

#[derive(Clone, Debug)]
pub struct Config {
    pub particles: usize,
    pub steps: usize,
    pub dt: f64,
    pub vmax: f64,
    pub report_every: usize,
    pub boundary: Boundary,
    pub gather: GatherMode,
    pub seed: u64,
}

fn parse<T: FromStr>(flag: &str, value: Option<String>) -> Result<T, String> {
    let v = value.ok_or_else(|| format!("{flag} needs a value"))?;
    v.parse().map_err(|_| format!("{flag}: cannot parse {v:?}"))
}

impl Config {
    pub fn from_args(mut args: impl Iterator<Item = String>) -> Result<Config, String> {
        let mut c = Config {
            particles: 200,
            steps: 20,
            dt: 0.05,
            vmax: 1.0,
            report_every: 5,
            boundary: Boundary::Periodic,
            gather: GatherMode::Packed,
            seed: 11,
        };
        while let Some(flag) = args.next() {
            match flag.as_str() {
                "--particles" => c.particles = parse(&flag, args.next())?,
                "--steps" => c.steps = parse(&flag, args.next())?,
                "--dt" => c.dt = parse(&flag, args.next())?,
                "--vmax" => c.vmax = parse(&flag, args.next())?,
                "--report-every" => c.report_every = parse(&flag, args.next())?,
                "--seed" => c.seed = parse(&flag, args.next())?,
                "--boundary" => {
                    let v: String = parse(&flag, args.next())?;
                    c.boundary = match v.as_str() {
                        "periodic" => Boundary::Periodic,
                        "reflect" => Boundary::Reflect,
                        other => return Err(format!("--boundary: unknown {other:?}")),
                    };
                }
                "--gather" => {
                    let v: String = parse(&flag, args.next())?;
                    c.gather = match v.as_str() {
                        "packed" | "v" => GatherMode::Packed,
                        "object" => GatherMode::Object,
                        other => return Err(format!("--gather: unknown {other:?}")),
                    };
                }
                other => return Err(format!("unknown flag {other:?}")),
            }
        }
        if c.report_every == 0 {
            return Err("--report-every must be at least 1".into());
        }
        Ok(c)
    }
}
