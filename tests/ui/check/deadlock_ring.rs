// A ring where every rank sends to its right before receiving from its left.
use dist_runtime::prelude::*;

const RING: Tag<u32> = Tag::new(7);

#[spmd]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let (r, n) = (world.rank(), world.size());
    if n < 3 {
        return Ok(());
    }
    let mut buf = [r as u32; 16];
    world.send((r + 1) % n, RING, &buf)?;
    world.recv((r + n - 1) % n, RING, &mut buf)?;
    Ok(())
}
