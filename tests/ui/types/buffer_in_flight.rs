use dist_runtime::prelude::*;

const ACT: Tag<f32> = Tag::new(1);

#[spmd]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let mut buf = vec![0.0f32; 4];
    let req = world.irecv(0, ACT, &mut buf)?;
    buf[0] = 1.0; // touching a buffer while the receive is in flight
    req.wait()
}
