// Under `strict`, a peer read from the environment is an error.
use dist_runtime::prelude::*;

const T: Tag<u8> = Tag::new(0);

#[spmd(ranks = 2, strict)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let peer: usize = std::env::var("PEER").ok().and_then(|s| s.parse().ok()).unwrap_or(0);
    let mut b = [0u8; 1];
    if world.rank() == 0 {
        world.send(peer, T, &b)?;
    } else {
        world.recv(0, T, &mut b)?;
    }
    Ok(())
}
