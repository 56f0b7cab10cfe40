// The receiver waits on a tag that the sender never uses.
use dist_runtime::prelude::*;

const GRAD: Tag<f32> = Tag::new(1);
const ACT: Tag<f32> = Tag::new(2);

#[spmd]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let (r, n) = (world.rank(), world.size());
    let mut buf = [0.0f32; 4];
    if r + 1 < n {
        world.send(r + 1, ACT, &buf)?;
    }
    if r > 0 {
        world.recv(r - 1, GRAD, &mut buf)?;
    }
    Ok(())
}
