use dist_runtime::prelude::*;

const ACT: Tag<f32> = Tag::new(1);

#[spmd(ranks = 2)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let mut buf = vec![0.0f32; 4];
    if world.rank() == 1 {
        return world.send(0, ACT, &buf);
    }
    let req = world.irecv(1, ACT, &mut buf)?;
    buf[0] = 1.0; // touching a buffer while the receive is in flight
    req.wait()
}
