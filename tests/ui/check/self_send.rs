// A blocking send to oneself before the matching receive.
use dist_runtime::prelude::*;

const T: Tag<i32> = Tag::new(3);

#[spmd(ranks = 1)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let me = world.rank();
    let mut b = [1i32; 2];
    world.send(me, T, &[5, 6])?;
    world.recv(me, T, &mut b)?;
    Ok(())
}
