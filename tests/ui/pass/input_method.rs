// A command line parsed into a struct (a word flag matched against its values, so the
// struct read is an input as a whole), and a method of it that checks the grid it read
// against the world size and refuses a mismatch: the method is followed, so `--grid 2x2`
// at one rank is the program refusing its input, not a mesh of the wrong size (the check
// refused this program at world size 1).
#![allow(dead_code)]
use dist_runtime::prelude::*;
use std::str::FromStr;

/// How the row and column communicators of the process grid are made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GridBuild {
    Split,
    Mesh,
}

#[derive(Clone, Debug)]
pub struct Config {
    pub scale: u32,
    pub degree: usize,
    pub source: usize,
    pub grid: Option<(usize, usize)>,
    pub seed: u64,
    pub build: GridBuild,
    pub dedup: bool,
    pub max_levels: usize,
}

fn parse<T: FromStr>(flag: &str, value: Option<String>) -> Result<T, String> {
    let v = value.ok_or_else(|| format!("{flag} needs a value"))?;
    v.parse().map_err(|_| format!("{flag}: cannot parse {v:?}"))
}

impl Config {
    pub fn from_args(mut args: impl Iterator<Item = String>) -> Result<Config, String> {
        let mut c = Config {
            scale: 6,
            degree: 4,
            source: 0,
            grid: None,
            seed: 7,
            build: GridBuild::Split,
            dedup: true,
            max_levels: 1000,
        };
        while let Some(flag) = args.next() {
            match flag.as_str() {
                "--grid" => {
                    let v = args.next().ok_or("--grid wants a value")?;
                    let (r, col) = v.split_once('x').ok_or_else(|| format!("--grid wants RxC, got {v:?}"))?;
                    c.grid = Some((r.parse().map_err(|_| "bad")?, col.parse().map_err(|_| "bad")?));
                }
                "--comm" => {
                    let v: String = args.next().ok_or("x")?;
                    c.build = match v.as_str() {
                        "split" => GridBuild::Split,
                        "mesh" => GridBuild::Mesh,
                        other => return Err(format!("--comm: unknown {other:?}")),
                    };
                }
                other => return Err(format!("unknown flag {other:?}")),
            }
        }
        Ok(c)
    }

    /// The process grid for `n` ranks: `--grid`, or the most square factorisation.
    pub fn grid_for(&self, n: usize) -> Result<(usize, usize), String> {
        match self.grid {
            Some((r, c)) if r * c == n => Ok((r, c)),
            Some((r, c)) => Err(format!("--grid {r}x{c} does not match {n} ranks")),
            None => {
                let r = (1..=n).filter(|r| n % r == 0 && r * r <= n).max().unwrap_or(1);
                Ok((r, n / r))
            }
        }
    }
}

dist_runtime::group!(Row);
dist_runtime::group!(Col);

#[spmd]
fn main(world: Comm<World>) -> Result<(), String> {
    let cfg = Config::from_args(std::env::args().skip(1))?;
    let n = world.size();
    let (pr, pc) = cfg.grid_for(n)?;
    let (col, row) = world.mesh2::<Col, Row>(pr, pc).map_err(|e| e.to_string())?;
    let mut v = [1u64];
    row.all_reduce(&mut v, ReduceOp::Sum).map_err(|e| e.to_string())?;
    col.all_reduce(&mut v, ReduceOp::Sum).map_err(|e| e.to_string())?;
    println!("OK");
    Ok(())
}
