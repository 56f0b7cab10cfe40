//! Command-line options and the choice of algorithm.

use std::str::FromStr;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algo {
    Ring,
    Tree,
    RecDoubling,
    Auto,
    /// Every algorithm that applies at this size, one after another.
    All,
}

impl Algo {
    /// The concrete algorithms to run for `n` ranks and vectors of `len` elements.
    pub fn resolve(self, n: usize, len: usize) -> Vec<Algo> {
        match self {
            Algo::All if n.is_power_of_two() => vec![Algo::Ring, Algo::Tree, Algo::RecDoubling],
            Algo::All => vec![Algo::Ring, Algo::Tree],
            Algo::Auto if n.is_power_of_two() && len <= 4096 => vec![Algo::RecDoubling],
            Algo::Auto if len < 64 * n => vec![Algo::Tree],
            Algo::Auto => vec![Algo::Ring],
            // Recursive doubling needs a power of two: fall back to the ring.
            Algo::RecDoubling if !n.is_power_of_two() => vec![Algo::Ring],
            a => vec![a],
        }
    }
}

/// How the ring's blocking neighbour exchange is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum P2pMode {
    /// One `sendrecv` per step.
    SendRecv,
    /// Plain `send`/`recv`, even ranks sending first.
    Parity,
}

#[derive(Clone, Debug)]
pub struct Config {
    pub algo: Algo,
    pub len: usize,
    pub iters: usize,
    pub root: Option<usize>,
    pub mode: P2pMode,
    pub seed: u64,
}

fn parse<T: FromStr>(flag: &str, value: Option<String>) -> Result<T, String> {
    let v = value.ok_or_else(|| format!("{flag} needs a value"))?;
    v.parse().map_err(|_| format!("{flag}: cannot parse {v:?}"))
}

impl Config {
    pub fn from_args(mut args: impl Iterator<Item = String>) -> Result<Config, String> {
        let mut c = Config { algo: Algo::Auto, len: 1001, iters: 2, root: None, mode: P2pMode::SendRecv, seed: 3 };
        while let Some(flag) = args.next() {
            match flag.as_str() {
                "--len" => c.len = parse(&flag, args.next())?,
                "--iters" => c.iters = parse(&flag, args.next())?,
                "--root" => c.root = Some(parse(&flag, args.next())?),
                "--seed" => c.seed = parse(&flag, args.next())?,
                "--algo" => {
                    let v: String = parse(&flag, args.next())?;
                    c.algo = match v.as_str() {
                        "ring" => Algo::Ring,
                        "tree" => Algo::Tree,
                        "rd" => Algo::RecDoubling,
                        "auto" => Algo::Auto,
                        "all" => Algo::All,
                        other => return Err(format!("--algo: unknown {other:?}")),
                    };
                }
                "--p2p" => {
                    let v: String = parse(&flag, args.next())?;
                    c.mode = match v.as_str() {
                        "sendrecv" => P2pMode::SendRecv,
                        "parity" => P2pMode::Parity,
                        other => return Err(format!("--p2p: unknown {other:?}")),
                    };
                }
                other => return Err(format!("unknown flag {other:?}")),
            }
        }
        Ok(c)
    }
}
