//! Command-line settings.

#[derive(Debug, Clone)]
pub struct Settings {
    pub cells: usize,
    pub steps: usize,
    pub rebalance_every: usize,
    pub tol: f64,
    pub nu: f64,
    pub speed: f64,
}

impl Settings {
    pub fn from_args() -> Result<Settings, String> {
        let mut s = Settings { cells: 240, steps: 300, rebalance_every: 10, tol: 1e-4, nu: 0.2, speed: 0.4 };
        let mut args = std::env::args().skip(1);
        while let Some(flag) = args.next() {
            let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
            let bad = |e: &dyn std::fmt::Display| format!("{flag} {value}: {e}");
            match flag.as_str() {
                "--cells" => s.cells = value.parse().map_err(|e| bad(&e))?,
                "--steps" => s.steps = value.parse().map_err(|e| bad(&e))?,
                "--every" => s.rebalance_every = value.parse().map_err(|e| bad(&e))?,
                "--tol" => s.tol = value.parse().map_err(|e| bad(&e))?,
                "--nu" => s.nu = value.parse().map_err(|e| bad(&e))?,
                "--speed" => s.speed = value.parse().map_err(|e| bad(&e))?,
                _ => return Err(format!("unknown flag {flag}")),
            }
        }
        if s.rebalance_every == 0 {
            return Err("--every must be at least 1".into());
        }
        if 2.0 * s.nu + s.speed > 1.0 {
            return Err(format!("2 nu + speed = {} > 1: the explicit scheme is unstable", 2.0 * s.nu + s.speed));
        }
        Ok(s)
    }
}
