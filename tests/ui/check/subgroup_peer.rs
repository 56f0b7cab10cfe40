// A peer that is a world rank used on the tp communicator, where it is out of range.
use dist_runtime::prelude::*;

dist_runtime::group!(Tp);
const T: Tag<f32> = Tag::new(1);

#[spmd(ranks = 4)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let r = world.rank();
    let tp = world.split::<Tp>((r / 2) as u32, r as i64)?;
    let mut x = [0.0f32; 2];
    if tp.rank() == 0 {
        tp.send(r + 1, T, &x)?;
    } else {
        tp.recv(r - 1, T, &mut x)?;
    }
    Ok(())
}
