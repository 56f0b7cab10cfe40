// An argument parser that matches each argument against the flags it knows, with more
// arms than the patterns of conditions on inputs reach in one run: the check runs again
// with the arms shifted until each was taken, so the `--check-plan` path (a barrier only
// rank 0 joins) is followed although its arm comes first.
use dist_runtime::prelude::*;

struct Options {
    nx: usize,
    ny: usize,
    tol: f64,
    seed: u64,
    check_plan: bool,
    verbose: bool,
}

fn parse(args: impl IntoIterator<Item = String>) -> Result<Options, String> {
    let mut o = Options { nx: 12, ny: 10, tol: 1e-9, seed: 7, check_plan: false, verbose: false };
    let mut args = args.into_iter();
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} expects a value"));
        match a.as_str() {
            "--check-plan" => o.check_plan = true,
            "--nx" => o.nx = value("--nx")?.parse().map_err(|e| format!("--nx: {e}"))?,
            "--ny" => o.ny = value("--ny")?.parse().map_err(|e| format!("--ny: {e}"))?,
            "--tol" => o.tol = value("--tol")?.parse().map_err(|e| format!("--tol: {e}"))?,
            "--seed" => o.seed = value("--seed")?.parse().map_err(|e| format!("--seed: {e}"))?,
            "-v" | "--verbose" => o.verbose = true,
            _ => return Err(format!("unknown argument {a:?}")),
        }
    }
    if o.nx < 2 || o.ny < 2 {
        return Err("the grid needs at least 2 x 2 points".into());
    }
    Ok(o)
}

#[spmd(sizes = 2..=3)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let o = parse(std::env::args().skip(1)).map_err(dist_runtime::Error::Env)?;
    if o.verbose {
        println!("tol {} seed {}", o.tol, o.seed);
    }
    if o.check_plan && world.rank() == 0 {
        world.barrier()?;
    }
    Ok(())
}
