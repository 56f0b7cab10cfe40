//! `--nx 24 --ny 20 --nz 8 --iters 60 --check-every 5 --tol 1e-9 --overlap --kernel
//! weighted --omega 0.8 --px 2`; grid sizes fall back to `STENCIL_N`.

use std::collections::HashMap;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum KernelKind { Jacobi, Weighted(f64) }
#[derive(Clone, Debug)]
pub struct Config {
    pub nx: usize, pub ny: usize, pub nz: usize,
    pub iters: usize, pub check_every: usize, pub tol: f64,
    pub overlap: bool, pub kernel: KernelKind, pub px: Option<usize>,
}

fn num<T: std::str::FromStr>(flags: &HashMap<String, String>, key: &str, default: T) -> Result<T, String> {
    flags.get(key).map_or(Ok(default), |v| v.parse().map_err(|_| format!("--{key}: cannot parse `{v}`")))
}

impl Config {
    pub fn from_env() -> Result<Config, String> {
        let mut flags = HashMap::new();
        let mut args = std::env::args().skip(1).peekable();
        while let Some(arg) = args.next() {
            let name = arg.strip_prefix("--").ok_or_else(|| format!("unexpected argument `{arg}`"))?.to_string();
            // A flag without a value is a switch.
            let value = args.next_if(|v| !v.starts_with("--")).unwrap_or_else(|| "true".into());
            flags.insert(name, value);
        }
        let n = std::env::var("STENCIL_N").ok().and_then(|s| s.parse().ok()).unwrap_or(16);
        let kernel = match flags.get("kernel").map(String::as_str) {
            None | Some("jacobi") => KernelKind::Jacobi,
            Some("weighted") => KernelKind::Weighted(num(&flags, "omega", 0.8)?),
            Some(other) => return Err(format!("unknown kernel `{other}`")),
        };
        let cfg = Config {
            nx: num(&flags, "nx", n)?,
            ny: num(&flags, "ny", n)?,
            nz: num(&flags, "nz", n)?,
            iters: num(&flags, "iters", 50)?,
            check_every: num(&flags, "check-every", 5)?,
            tol: num(&flags, "tol", 1e-8)?,
            overlap: num(&flags, "overlap", false)?,
            kernel,
            px: flags.contains_key("px").then(|| num(&flags, "px", 1)).transpose()?,
        };
        (cfg.check_every > 0).then_some(cfg).ok_or_else(|| "--check-every must be at least 1".into())
    }
}
