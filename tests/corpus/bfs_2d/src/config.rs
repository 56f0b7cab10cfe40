//! Command-line options.

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
                "--scale" => c.scale = parse(&flag, args.next())?,
                "--degree" => c.degree = parse(&flag, args.next())?,
                "--source" => c.source = parse(&flag, args.next())?,
                "--seed" => c.seed = parse(&flag, args.next())?,
                "--max-levels" => c.max_levels = parse(&flag, args.next())?,
                "--no-dedup" => c.dedup = false,
                "--grid" => {
                    let v: String = parse(&flag, args.next())?;
                    let (r, col) = v.split_once('x').ok_or_else(|| format!("--grid wants RxC, got {v:?}"))?;
                    c.grid = Some((parse(&flag, Some(r.to_string()))?, parse(&flag, Some(col.to_string()))?));
                }
                "--comm" => {
                    let v: String = parse(&flag, args.next())?;
                    c.build = match v.as_str() {
                        "split" => GridBuild::Split,
                        "mesh" => GridBuild::Mesh,
                        other => return Err(format!("--comm: unknown {other:?}")),
                    };
                }
                other => return Err(format!("unknown flag {other:?}")),
            }
        }
        if c.source >= 1 << c.scale {
            return Err(format!("--source {} is not a vertex (there are {})", c.source, 1usize << c.scale));
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
