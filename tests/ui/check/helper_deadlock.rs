// A helper elsewhere in the file is checked where it is called: both ranks send first.
use dist_runtime::prelude::*;

const T: Tag<f32> = Tag::new(4);

fn exchange(c: &Comm<World>, peer: usize, out: &[f32], inn: &mut [f32]) -> dist_runtime::Result<()> {
    c.send(peer, T, out)?;
    c.recv(peer, T, inn)
}

#[spmd(ranks = 2)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let mut got = [0.0f32; 2];
    exchange(&world, 1 - world.rank(), &[1.0, 2.0], &mut got)?;
    Ok(())
}
