// A helper module of `helper_in_module.rs`: both ranks send first, then receive.
use dist_runtime::prelude::*;

pub const GRAD: Tag<f32> = Tag::new(1);

pub fn exchange(world: &Comm<World>, mine: &[f32], theirs: &mut [f32]) -> dist_runtime::Result<()> {
    let peer = 1 - world.rank();
    world.send(peer, GRAD, mine)?;
    world.recv(peer, GRAD, theirs)?;
    Ok(())
}
