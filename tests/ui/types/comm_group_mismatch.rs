use dist_runtime::prelude::*;

dist_runtime::group!(Tp);
dist_runtime::group!(Dp);

fn average_gradients(dp: &Comm<Dp>, grad: &mut [f32]) -> dist_runtime::Result<()> {
    dp.all_reduce(grad, ReduceOp::Avg)
}

#[spmd]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let (_dp, tp): (Comm<Dp>, Comm<Tp>) = world.mesh2(1, world.size())?;
    let mut grad = vec![0.0f32; 8];
    average_gradients(&tp, &mut grad)
}
