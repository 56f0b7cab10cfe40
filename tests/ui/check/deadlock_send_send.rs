// The classic: both ranks send first, then receive.
use dist_runtime::prelude::*;

const T: Tag<f64> = Tag::new(0);

#[spmd(ranks = 2)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let peer = 1 - world.rank();
    let mine = [world.rank() as f64; 8];
    let mut theirs = [0.0f64; 8];
    world.send(peer, T, &mine)?;
    world.recv(peer, T, &mut theirs)?;
    Ok(())
}
