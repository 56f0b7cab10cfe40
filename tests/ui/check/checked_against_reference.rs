// A power iteration that stops on a residual reduced over every rank, then compares its
// iteration count with a serial run of the same method, as tests of numerical code do. The
// check picks how the residual loop goes (once, twice, ...), which is not what the serial
// run computes, so the program's own comparison fails on those paths; the check takes it
// to pass and follows what comes after: a report only rank 0 joins.
use dist_runtime::prelude::*;

fn serial_iterations(tol: f64) -> usize {
    let (mut x, mut it) = (1.0f64, 0);
    while x > tol {
        x *= 0.5;
        it += 1;
    }
    it
}

#[spmd(sizes = 2..=3)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let tol = 1e-3;
    let mut x = [1.0f64];
    let mut it = 0;
    loop {
        x[0] *= 0.5;
        world.all_reduce(&mut x, ReduceOp::Max)?;
        it += 1;
        if x[0] <= tol {
            break;
        }
    }
    let want = serial_iterations(tol);
    if it != want {
        return Err(dist_runtime::Error::Env(format!("{it} iterations, the serial run took {want}")));
    }
    if world.rank() == 0 {
        let mut report = [it as u64];
        world.all_reduce(&mut report, ReduceOp::Sum)?;
    }
    Ok(())
}
