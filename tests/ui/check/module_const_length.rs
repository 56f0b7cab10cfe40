// A constant named by its module's path (`shapes::HIDDEN`, in another file) is the
// number that module defines, even where the entry's file has a constant of that name:
// a receive sized with the hidden width while the previous stage sends the model width
// is an error at the receive.
use dist_runtime::prelude::*;

#[path = "modules/shapes.rs"]
mod shapes;

/// The width of the serial reference's layer (not the pipeline's).
const HIDDEN: usize = 2;
const ACT: Tag<f32> = Tag::new(1);

#[spmd(sizes = 2..=4)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let (r, n) = (world.rank(), world.size());
    let act = vec![1.0f32; shapes::BATCH * shapes::MODEL];
    let mut got = vec![0.0f32; crate::shapes::BATCH * shapes::HIDDEN];
    if r + 1 < n {
        world.send(r + 1, ACT, &act)?;
    }
    if r > 0 {
        world.recv(r - 1, ACT, &mut got)?;
    }
    assert!(HIDDEN < shapes::HIDDEN);
    Ok(())
}
