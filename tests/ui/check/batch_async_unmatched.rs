// A non-blocking batch whose receive has no sender: rank 1 never sends back.
use dist_runtime::prelude::*;

const T: Tag<u32> = Tag::new(1);

#[spmd(ranks = 2)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let peer = 1 - world.rank();
    let mine = [7u32];
    let mut got = [0u32];
    if world.rank() == 0 {
        let req = world.batch_async(|b| {
            b.send(peer, T, &mine);
            b.recv(peer, T, &mut got);
        })?;
        req.wait()?;
    } else {
        world.recv(peer, T, &mut got)?;
    }
    Ok(())
}
