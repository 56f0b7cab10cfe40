// A solver loop that runs until a residual reduced over every rank is small: every rank
// leaves it together, so the check follows it. Rank 0 logs the norm of its own part on
// the second iteration with a collective nobody else calls.
use dist_runtime::prelude::*;

const HALO: Tag<f64> = Tag::new(1);

fn residual(world: &Comm<World>, local: f64) -> dist_runtime::Result<f64> {
    let mut s = [local * local];
    world.all_reduce(&mut s, ReduceOp::Sum)?;
    Ok(s[0].sqrt())
}

#[spmd(sizes = 2..=3)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let (r, n) = (world.rank(), world.size());
    let tol = 1e-8;
    let mut x = 1.0f64;
    let mut res = residual(&world, x)?;
    let mut it = 0;
    while res > tol && it < 1000 {
        let mut ghost = [0.0];
        world.sendrecv((r + 1) % n, HALO, &[x], (r + n - 1) % n, &mut ghost)?;
        x = 0.5 * (x + ghost[0]);
        res = residual(&world, x)?;
        it += 1;
        if it == 2 && r == 0 {
            let mut norm = [x];
            world.all_reduce(&mut norm, ReduceOp::Max)?;
        }
    }
    Ok(())
}
