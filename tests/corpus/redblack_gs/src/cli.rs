//! `redblack_gs [--nx N] [--ny N] [--tol X] [--max-it K] [--px P] [--verbose]`

use std::str::FromStr;

#[derive(Debug, Clone)]
pub struct Settings {
    /// Interior points along x (grid rows) and y (grid columns).
    pub nx: usize,
    pub ny: usize,
    pub tol: f64,
    pub max_it: usize,
    /// Process rows; 0 chooses a near-square grid.
    pub px: usize,
    pub verbose: bool,
}

fn take<T: FromStr>(name: &str, it: &mut impl Iterator<Item = String>) -> Result<T, String> {
    let raw = it.next().ok_or(format!("{name} needs a value"))?;
    raw.parse().map_err(|_| format!("{name}: cannot parse {raw:?}"))
}

impl Settings {
    pub fn from_env() -> Result<Settings, String> {
        let mut s = Settings { nx: 24, ny: 17, tol: 1e-6, max_it: 5000, px: 0, verbose: false };
        let mut it = std::env::args().skip(1);
        while let Some(arg) = it.next() {
            match arg.as_str() {
                "--nx" => s.nx = take(&arg, &mut it)?,
                "--ny" => s.ny = take(&arg, &mut it)?,
                "--tol" => s.tol = take(&arg, &mut it)?,
                "--max-it" => s.max_it = take(&arg, &mut it)?,
                "--px" => s.px = take(&arg, &mut it)?,
                "--verbose" => s.verbose = true,
                _ => return Err(format!("unrecognised argument {arg:?}")),
            }
        }
        if s.nx < 2 || s.ny < 2 {
            return Err("the grid needs at least 2 x 2 interior points".into());
        }
        Ok(s)
    }

    /// Process rows × process columns for `n` ranks.
    pub fn process_grid(&self, n: usize) -> Result<(usize, usize), String> {
        let px = if self.px == 0 {
            (1..=n).filter(|d| n % d == 0 && d * d <= n).max().unwrap_or(1)
        } else {
            self.px
        };
        if n % px != 0 {
            return Err(format!("--px {px} does not divide {n} ranks"));
        }
        let py = n / px;
        if px > self.nx || py > self.ny {
            return Err(format!("a {px} x {py} process grid is too fine for {} x {} points", self.nx, self.ny));
        }
        Ok((px, py))
    }
}
