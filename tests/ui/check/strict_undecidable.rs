// Under `strict`, a peer computed from data (here a value the root broadcast: its
// process id) is an error.
use dist_runtime::prelude::*;

const T: Tag<u64> = Tag::new(0);

#[spmd(ranks = 2, strict)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let mut got = [std::process::id() as u64 % 2];
    world.broadcast(&mut got, 0)?;
    let peer = got[0] as usize;
    let b = [0u64; 1];
    if world.rank() == 0 {
        world.send(peer, T, &b)?;
    } else {
        world.recv(0, T, &mut got)?;
    }
    Ok(())
}
