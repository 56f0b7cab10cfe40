// In a 2 x 2 mesh, only the first tp rank of each row joins the tp all_reduce.
use dist_runtime::prelude::*;

dist_runtime::group!(Dp);
dist_runtime::group!(Tp);

#[spmd(ranks = 4)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let (dp, tp) = world.mesh2::<Dp, Tp>(2, 2)?;
    let mut partial = [1.0f32; 8];
    if tp.rank() == 0 {
        tp.all_reduce(&mut partial, ReduceOp::Sum)?;
    }
    dp.barrier()?;
    Ok(())
}
