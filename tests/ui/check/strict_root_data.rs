// Under `strict`, a root that depends on rank-local data (a loss) is an error, with what
// it depends on; the same program without `strict` compiles with a warning there.
use dist_runtime::prelude::*;

#[spmd(ranks = 2, strict)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let mut params = vec![world.rank() as f32; 4];
    let local_loss: f32 = params.iter().map(|p| p * 0.5).sum();
    let root = if local_loss < 2.4 { world.rank() } else { 0 };
    world.broadcast(&mut params, root)?;
    Ok(())
}
