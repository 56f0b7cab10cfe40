//! `--limit N --chunk C [--quiet]`: count the primes below N in chunks of C numbers.

pub struct Args {
    pub limit: u64,
    pub chunk: u64,
    pub quiet: bool,
}

pub fn parse() -> Result<Args, String> {
    let mut args = Args { limit: 200_000, chunk: 5_000, quiet: false };
    let argv: Vec<String> = std::env::args().collect();
    let mut rest = argv[1..].iter();
    while let Some(a) = rest.next() {
        let mut take = |name: &str| -> Result<u64, String> {
            rest.next()
                .ok_or(format!("{name} needs a number"))?
                .replace('_', "")
                .parse()
                .map_err(|e| format!("{name}: {e}"))
        };
        match a.as_str() {
            "--limit" => args.limit = take("--limit")?,
            "--chunk" => args.chunk = take("--chunk")?,
            "--quiet" | "-q" => args.quiet = true,
            other => return Err(format!("unexpected argument {other}; usage: task_farm [--limit N] [--chunk C] [--quiet]")),
        }
    }
    if args.chunk == 0 {
        return Err("--chunk must be positive".into());
    }
    Ok(args)
}
