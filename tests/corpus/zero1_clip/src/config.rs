use std::str::FromStr;

/// How the flat parameter vector is cut into per-rank shards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Exact shards of uneven size (`reduce_scatter_v` / `all_gather_v`).
    Ragged,
    /// Every shard padded to `ceil(P / n)` (plain `reduce_scatter` / `all_gather`).
    Padded,
}

#[derive(Clone, Debug)]
pub struct Config {
    pub inputs: usize,
    pub hidden: usize,
    pub rows: usize,
    pub steps: usize,
    pub accum: usize,
    pub lr: f64,
    pub clip: Option<f64>,
    pub ckpt_every: usize,
    pub tol: f64,
    pub layout: Layout,
    pub seed: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            inputs: 6,
            hidden: 8,
            rows: 40,
            steps: 8,
            accum: 2,
            lr: 0.01,
            clip: None,
            ckpt_every: 0,
            tol: 0.0,
            layout: Layout::Ragged,
            seed: 17,
        }
    }
}

fn parse<T: FromStr>(flag: &str, value: Option<String>) -> Result<T, String> {
    let v = value.ok_or_else(|| format!("{flag} needs a value"))?;
    v.parse().map_err(|_| format!("{flag}: cannot parse {v:?}"))
}

impl Config {
    pub fn from_args(mut args: impl Iterator<Item = String>) -> Result<Config, String> {
        let mut c = Config::default();
        while let Some(flag) = args.next() {
            match flag.as_str() {
                "--inputs" => c.inputs = parse(&flag, args.next())?,
                "--hidden" => c.hidden = parse(&flag, args.next())?,
                "--rows" => c.rows = parse(&flag, args.next())?,
                "--steps" => c.steps = parse(&flag, args.next())?,
                "--accum" => c.accum = parse(&flag, args.next())?,
                "--lr" => c.lr = parse(&flag, args.next())?,
                "--clip" => c.clip = Some(parse(&flag, args.next())?),
                "--ckpt-every" => c.ckpt_every = parse(&flag, args.next())?,
                "--tol" => c.tol = parse(&flag, args.next())?,
                "--seed" => c.seed = parse(&flag, args.next())?,
                "--layout" => {
                    let v: String = parse(&flag, args.next())?;
                    c.layout = match v.as_str() {
                        "ragged" | "v" => Layout::Ragged,
                        "padded" | "pad" => Layout::Padded,
                        other => return Err(format!("--layout: unknown layout {other:?}")),
                    };
                }
                other => return Err(format!("unknown flag {other:?}")),
            }
        }
        if c.accum == 0 || c.rows < c.accum {
            return Err(format!("--accum must be in 1..={}", c.rows));
        }
        Ok(c)
    }
}
