// In a 2 x 2 x 2 (pp, dp, tp) mesh: the dp all-reduce inside `pp.rank() == 0` is fine
// (a dp group lies within one stage), but only the last stage joins the pp all-reduce
// of the loss, and only the first tp shard reaches the flattened dp x tp barrier.
use dist_runtime::prelude::*;

dist_runtime::group!(Pp);
dist_runtime::group!(Dp);
dist_runtime::group!(Tp);
dist_runtime::group!(DpTp);

#[spmd(ranks = 8)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let dims = [2, 2, 2];
    let (pp, dp, tp) = world.mesh::<(Pp, Dp, Tp)>(dims)?;
    let mut grad = [1.0f32; 8];
    tp.all_reduce(&mut grad, ReduceOp::Sum)?;
    if pp.rank() == 0 {
        dp.all_reduce(&mut grad, ReduceOp::Avg)?;
    }
    let mut loss = [0.5f32];
    if pp.rank() == 1 {
        pp.all_reduce(&mut loss, ReduceOp::Sum)?;
    }
    let dptp = world.mesh_group::<DpTp>(&dims, &[1, 2])?;
    if world.mesh_coordinate(&dims)?[2] == 0 {
        dptp.barrier()?;
    }
    Ok(())
}
