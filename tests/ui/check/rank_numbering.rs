// Ported from torch: `dist.broadcast(w, src=tp_ranks[0], group=tp)` and
// `dist.send(t, dst=world_rank, group=tp)` take world ranks; a `Comm<Tp>` takes its own.
use dist_runtime::prelude::*;

dist_runtime::group!(Dp);
dist_runtime::group!(Tp);

const T: Tag<f32> = Tag::new(1);

#[spmd(ranks = 4)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let (_dp, tp) = world.mesh2::<Dp, Tp>(2, 2)?;
    let first = tp.members()[0];
    let mut w = [0f32; 4];
    tp.broadcast(&mut w, first)?;
    Ok(())
}

#[spmd(ranks = 4)]
fn second(world: Comm<World>) -> dist_runtime::Result<()> {
    let (_dp, tp) = world.mesh2::<Dp, Tp>(2, 2)?;
    let partner = tp.world_rank_of(1 - tp.rank())?; // a world rank, as torch's dst=
    let mut x = [0f32];
    if tp.rank() == 0 {
        tp.send(partner, T, &[1.0])?;
    } else {
        tp.recv(partner, T, &mut x)?;
    }
    Ok(())
}
