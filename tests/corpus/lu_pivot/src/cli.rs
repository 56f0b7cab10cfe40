//! Command-line flags, parsed by hand: `--n N --seed S [--verbose]`.

pub struct Options {
    /// Order of the system.
    pub n: usize,
    /// Seed of the random matrix; every rank builds the same one from it.
    pub seed: u64,
    /// Print the pivot chosen for each column (rank 0 only).
    pub verbose: bool,
}

const USAGE: &str = "usage: lu_pivot [--n N] [--seed S] [--verbose]";

impl Options {
    pub fn from_args() -> Result<Options, String> {
        Self::parse(std::env::args().skip(1))
    }

    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Options, String> {
        let mut opts = Options { n: 48, seed: 2024, verbose: false };
        let mut args = args.into_iter();
        while let Some(flag) = args.next() {
            match flag.as_str() {
                "--n" | "-n" => opts.n = value(&flag, args.next())?,
                "--seed" => opts.seed = value(&flag, args.next())?,
                "--verbose" | "-v" => opts.verbose = true,
                "--help" | "-h" => return Err(USAGE.to_string()),
                other => return Err(format!("unknown flag {other:?}\n{USAGE}")),
            }
        }
        if opts.n == 0 {
            return Err("--n must be at least 1".to_string());
        }
        Ok(opts)
    }
}

fn value<T: std::str::FromStr>(flag: &str, v: Option<String>) -> Result<T, String> {
    let v = v.ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
    v.parse().map_err(|_| format!("{flag}: cannot parse {v:?}"))
}
