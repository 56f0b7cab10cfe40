// A collective through a communicator held in a struct, called by one tensor-parallel
// rank of each pair only (inside a method).
use dist_runtime::prelude::*;

dist_runtime::group!(Dp);
dist_runtime::group!(Tp);

struct ParallelState {
    dp: Comm<Dp>,
    tp: Comm<Tp>,
}

impl ParallelState {
    fn new(world: &Comm<World>) -> dist_runtime::Result<Self> {
        let (dp, tp) = world.mesh2::<Dp, Tp>(2, 2)?;
        Ok(Self { dp, tp })
    }

    fn sync(&self, g: &mut [f32]) -> dist_runtime::Result<()> {
        if self.dp.rank() == 0 {
            self.dp.all_reduce(g, ReduceOp::Sum)?;
        }
        self.tp.all_reduce(g, ReduceOp::Sum)
    }
}

#[spmd(ranks = 4)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let ps = ParallelState::new(&world)?;
    let mut g = [1.0f32; 8];
    ps.sync(&mut g)?;
    let mut x = [0u8];
    ps.tp.broadcast(&mut x, 0)?;
    Ok(())
}
