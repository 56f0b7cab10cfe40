// Ported from torch: `dist.broadcast(x, src=2, group=tp)`, where `src` is a world rank.
// dist's roots are the communicator's own ranks: the fix is `tp.group_rank_of(2)?`,
// not `2 % n` (which would name another rank).
use dist_runtime::prelude::*;

dist_runtime::group!(Tp);

#[spmd(ranks = 4)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let mut x = [world.rank() as f32; 4];
    if let Some(tp) = world.subgroup::<Tp>(&[2, 3])? {
        tp.broadcast(&mut x, 2)?;
    }
    Ok(())
}
