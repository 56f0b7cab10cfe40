// The algorithm comes from `--algo`, parsed into an enum of unit variants: the check
// takes each variant in some run (guards included), so the tree reduction's bug (every
// rank sends its partial to `r ^ 1` first, blocking) is found although no run of the
// check is told which `--algo` the user will pass.
use dist_runtime::prelude::*;

const PART: Tag<f64> = Tag::new(1);

#[derive(Clone, Copy, Debug)]
enum Algo {
    Ring,
    Tree,
    Auto,
}

fn algo_from_args() -> Algo {
    let mut algo = Algo::Auto;
    let args: Vec<String> = std::env::args().collect();
    for w in args.windows(2) {
        if w[0] == "--algo" {
            algo = match w[1].as_str() {
                "ring" => Algo::Ring,
                "tree" => Algo::Tree,
                _ => Algo::Auto,
            };
        }
    }
    algo
}

#[spmd(sizes = 2..=4)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let (r, p) = (world.rank(), world.size());
    let algo = match algo_from_args() {
        Algo::Auto if p.is_power_of_two() => Algo::Tree,
        Algo::Auto => Algo::Ring,
        other => other,
    };
    let mut x = [r as f64];
    match algo {
        Algo::Ring => world.all_reduce(&mut x, ReduceOp::Sum)?,
        Algo::Tree | Algo::Auto => {
            let mut theirs = [0.0];
            let partner = r ^ 1;
            if partner < p {
                world.send(partner, PART, &x)?;
                world.recv(partner, PART, &mut theirs)?;
            }
        }
    }
    Ok(())
}
