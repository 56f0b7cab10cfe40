// A solver's loop leaves on the rank's own residual (summed before the reduction), so
// ranks may leave at different iterations and the reduction in `dot` is reached by some
// ranks only. `dot` is also the name of the serial reference's function in another
// module, which holds the bare name: the loop still communicates (it calls the
// solver's own `dot`), so it is followed, never summarised as quiet code (a loop counted
// by a flag is first tried as code that does not communicate).
use dist_runtime::prelude::*;

#[path = "modules/serial_dot.rs"]
mod reference;

#[path = "modules/local_exit.rs"]
mod solver;

#[spmd(sizes = 2..=2)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let want = reference::dot(&[1.0; 4], &[2.0; 4]);
    let cfg = solver::Config::from_args();
    let grid = solver::Grid { world, n: 8 };
    let iters = solver::solve(&grid, &cfg)?;
    println!("{want} {iters}");
    Ok(())
}
