// The last rank sends past the end of the world.
use dist_runtime::prelude::*;

const T: Tag<u8> = Tag::new(0);

#[spmd]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let r = world.rank();
    let mut b = [0u8; 1];
    if r % 2 == 0 {
        world.send(r + 1, T, &b)?;
    } else {
        world.recv(r - 1, T, &mut b)?;
    }
    Ok(())
}
