//! Command-line flags with defaults.

#[derive(Debug, Clone)]
pub struct Config {
    /// Rows of the global grid, boundary rows included.
    pub rows: usize,
    /// Columns of the global grid, boundary columns included.
    pub cols: usize,
    /// Most Jacobi sweeps to run.
    pub steps: usize,
    /// Test convergence every this many sweeps.
    pub check_every: usize,
    /// Stop once the largest change of a sweep falls below this.
    pub tol: f64,
    /// Temperature held on the top edge.
    pub hot: f64,
    /// Where rank 0 writes the final grid, if anywhere.
    pub checkpoint: Option<String>,
}

impl Default for Config {
    fn default() -> Self {
        Config { rows: 50, cols: 36, steps: 1000, check_every: 10, tol: 2e-2, hot: 100.0, checkpoint: None }
    }
}

fn parse<T: std::str::FromStr>(flag: &str, v: Option<String>) -> Result<T, String> {
    let v = v.ok_or(format!("{flag} needs a value"))?;
    v.parse().map_err(|_| format!("{flag}: bad value {v:?}"))
}

impl Config {
    pub fn parse(args: impl Iterator<Item = String>) -> Result<Config, String> {
        let mut c = Config::default();
        let mut args = args.peekable();
        while let Some(a) = args.next() {
            match a.as_str() {
                "--rows" => c.rows = parse(&a, args.next())?,
                "--cols" => c.cols = parse(&a, args.next())?,
                "--steps" => c.steps = parse(&a, args.next())?,
                "--check-every" => c.check_every = parse(&a, args.next())?,
                "--tol" => c.tol = parse(&a, args.next())?,
                "--hot" => c.hot = parse(&a, args.next())?,
                "--checkpoint" => c.checkpoint = Some(parse(&a, args.next())?),
                other => return Err(format!("unknown flag {other}")),
            }
        }
        if c.rows < 3 || c.cols < 3 {
            return Err("the grid needs at least 3 × 3 points".into());
        }
        if c.check_every == 0 {
            return Err("--check-every must be at least 1".into());
        }
        Ok(c)
    }
}
