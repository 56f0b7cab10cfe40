// A multigrid hierarchy whose coarsest level runs on a sub-communicator, kept in a
// `Box` of the same solver type: the check follows the communicator through the box
// (`Box::new`, then the boxed solver's own methods) and proves every size.
use dist_runtime::prelude::*;

dist_runtime::group!(Coarse);

struct Solver<G: Group> {
    comm: Comm<G>,
    sub: Option<Box<Solver<Coarse>>>,
}

impl<G: Group> Solver<G> {
    fn new(comm: Comm<G>, sub: Option<Box<Solver<Coarse>>>) -> Self {
        Solver { comm, sub }
    }
    fn cycle(&self, x: &mut [f64]) -> dist_runtime::Result<()> {
        self.comm.all_reduce(x, ReduceOp::Sum)?;
        if let Some(s) = &self.sub {
            s.cycle(x)?;
        }
        Ok(())
    }
}

#[spmd(strict, sizes = 1..=4)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let low = (world.rank() < 2) as u32;
    let coarse = world.split::<Coarse>(low, world.rank() as i64)?;
    let sub = (low == 1).then(|| Box::new(Solver::new(coarse, None)));
    let s = Solver::new(world.clone(), sub);
    let mut x = [1.0];
    s.cycle(&mut x)?;
    Ok(())
}
