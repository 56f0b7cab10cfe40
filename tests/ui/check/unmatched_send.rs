// Rank 0 sends twice, rank 1 receives once.
use dist_runtime::prelude::*;

const X: Tag<f32> = Tag::new(1);

#[spmd(ranks = 2)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let mut buf = [0.0f32; 4];
    if world.rank() == 0 {
        world.send(1, X, &buf)?;
        world.send(1, X, &buf)?;
    } else {
        world.recv(0, X, &mut buf)?;
    }
    Ok(())
}
