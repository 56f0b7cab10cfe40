//! Command-line options.

#[derive(Debug, Clone)]
pub struct Options {
    pub nx: usize,
    pub ny: usize,
    pub tol: f64,
    pub max_iter: usize,
    pub seed: u64,
    pub check_plan: bool,
    pub verbose: bool,
}

impl Options {
    pub fn rows(&self) -> usize {
        self.nx * self.ny
    }
}

pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Options, String> {
    let mut o = Options { nx: 12, ny: 10, tol: 1e-9, max_iter: 500, seed: 7, check_plan: false, verbose: false };
    let mut args = args.into_iter();
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} expects a value"));
        match a.as_str() {
            "--nx" => o.nx = value("--nx")?.parse().map_err(|e| format!("--nx: {e}"))?,
            "--ny" => o.ny = value("--ny")?.parse().map_err(|e| format!("--ny: {e}"))?,
            "--tol" => o.tol = value("--tol")?.parse().map_err(|e| format!("--tol: {e}"))?,
            "--max-iter" => o.max_iter = value("--max-iter")?.parse().map_err(|e| format!("--max-iter: {e}"))?,
            "--seed" => o.seed = value("--seed")?.parse().map_err(|e| format!("--seed: {e}"))?,
            "--check-plan" => o.check_plan = true,
            "-v" | "--verbose" => o.verbose = true,
            _ => return Err(format!("unknown argument {a:?}")),
        }
    }
    if o.nx < 2 || o.ny < 2 {
        return Err("the grid needs at least 2 × 2 points".into());
    }
    Ok(o)
}
