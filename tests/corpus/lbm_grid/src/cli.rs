//! Options: `--grid PXxPY`, `--nx`, `--ny`, `--steps`, `--check-every`, `--alpha`, `--verbose`.

#[derive(Debug, Clone)]
pub struct Cli {
    pub grid: Option<(usize, usize)>,
    pub nx: usize,
    pub ny: usize,
    pub steps: usize,
    pub check_every: usize,
    pub alpha: f64,
    pub verbose: bool,
}

fn parse_grid(s: &str) -> Result<(usize, usize), String> {
    let (a, b) = s.split_once(['x', 'X']).ok_or_else(|| format!("--grid wants PXxPY, got {s:?}"))?;
    let px = a.parse::<usize>().map_err(|e| format!("--grid {s}: {e}"))?;
    let py = b.parse::<usize>().map_err(|e| format!("--grid {s}: {e}"))?;
    if px == 0 || py == 0 {
        return Err("--grid: both dimensions must be positive".into());
    }
    Ok((px, py))
}

impl Cli {
    pub fn parse(argv: &[String]) -> Result<Cli, String> {
        let mut cli = Cli { grid: None, nx: 24, ny: 18, steps: 30, check_every: 10, alpha: 0.1, verbose: false };
        let mut i = 0;
        while i < argv.len() {
            let flag = argv[i].as_str();
            let val = argv.get(i + 1).cloned().unwrap_or_default();
            let num = |v: &str| v.parse::<usize>().map_err(|e| format!("{flag} {v:?}: {e}"));
            match flag {
                "--grid" => cli.grid = Some(parse_grid(&val)?),
                "--nx" => cli.nx = num(&val)?,
                "--ny" => cli.ny = num(&val)?,
                "--steps" => cli.steps = num(&val)?,
                "--check-every" => cli.check_every = num(&val)?,
                "--alpha" => cli.alpha = val.parse().map_err(|e| format!("--alpha {val:?}: {e}"))?,
                "--verbose" => {
                    cli.verbose = true;
                    i += 1;
                    continue;
                }
                _ => return Err(format!("unknown option {flag}")),
            }
            i += 2;
        }
        Ok(cli)
    }

    /// The process grid: the one asked for, or the squarest factorisation of `n`
    /// with px ≥ py.
    pub fn process_grid(&self, n: usize) -> Result<(usize, usize), String> {
        match self.grid {
            Some((px, py)) if px * py == n => Ok((px, py)),
            Some((px, py)) => Err(format!("--grid {px}x{py} needs {} ranks, the job has {n}", px * py)),
            None => {
                let py = (1..=n).filter(|d| n % d == 0 && d * d <= n).max().unwrap_or(1);
                Ok((n / py, py))
            }
        }
    }
}
