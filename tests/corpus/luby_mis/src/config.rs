//! Command-line options of the MIS run.

use std::str::FromStr;

#[derive(Debug, Clone)]
pub struct Options {
    pub vertices: usize,
    /// Edges drawn per vertex (before duplicates are removed).
    pub degree: usize,
    /// Most edges join vertices at most this far apart (a mesh-like graph)...
    pub span: usize,
    /// ...and this percentage join any two vertices.
    pub long_range_pct: u64,
    pub seed: u64,
    pub max_rounds: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options { vertices: 3000, degree: 3, span: 50, long_range_pct: 10, seed: 7, max_rounds: 200 }
    }
}

fn value<T: FromStr>(name: &str, v: Option<&String>) -> Result<T, String> {
    let v = v.ok_or_else(|| format!("missing value after {name}"))?;
    v.parse().map_err(|_| format!("invalid value {v:?} for {name}"))
}

impl Options {
    pub fn parse(args: &[String]) -> Result<Options, String> {
        let mut o = Options::default();
        let mut i = 0;
        while i < args.len() {
            let name = args[i].as_str();
            let v = args.get(i + 1);
            match name {
                "--vertices" => o.vertices = value(name, v)?,
                "--degree" => o.degree = value(name, v)?,
                "--span" => o.span = value(name, v)?,
                "--long-range-pct" => o.long_range_pct = value(name, v)?,
                "--seed" => o.seed = value(name, v)?,
                "--max-rounds" => o.max_rounds = value(name, v)?,
                _ => return Err(format!("unknown option {name}")),
            }
            i += 2;
        }
        if o.vertices == 0 || o.span == 0 {
            return Err("--vertices and --span must be positive".into());
        }
        if o.long_range_pct > 100 {
            return Err("--long-range-pct is a percentage".into());
        }
        Ok(o)
    }
}
