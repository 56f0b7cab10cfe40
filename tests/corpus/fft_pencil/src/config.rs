//! Command-line options: `--rows N --cols M --seed S --tol T`, each with a default.

#[derive(Debug, Clone)]
pub struct Config {
    pub rows: usize,
    pub cols: usize,
    pub seed: u64,
    pub tol: f64,
    pub verbose: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config { rows: 24, cols: 30, seed: 7, tol: 1e-9, verbose: false }
    }
}

fn value<T: std::str::FromStr>(flag: &str, v: Option<&String>) -> Result<T, String> {
    let v = v.ok_or_else(|| format!("{flag} needs a value"))?;
    v.parse().map_err(|_| format!("{flag}: cannot parse {v:?}"))
}

impl Config {
    pub fn from_args() -> Result<Config, String> {
        let args: Vec<String> = std::env::args().skip(1).collect();
        Self::parse(&args)
    }

    pub fn parse(args: &[String]) -> Result<Config, String> {
        let mut cfg = Config::default();
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            match flag.as_str() {
                "--rows" => cfg.rows = value(flag, it.next())?,
                "--cols" => cfg.cols = value(flag, it.next())?,
                "--seed" => cfg.seed = value(flag, it.next())?,
                "--tol" => cfg.tol = value(flag, it.next())?,
                "-v" | "--verbose" => cfg.verbose = true,
                other => return Err(format!("unknown option {other:?}")),
            }
        }
        if cfg.rows == 0 || cfg.cols == 0 {
            return Err("the grid needs at least one row and one column".into());
        }
        Ok(cfg)
    }
}
