use dist_runtime::prelude::*;

const ACT: Tag<f32> = Tag::new(1);

#[spmd]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let mut counts = vec![0i32; 4];
    world.recv(0, ACT, &mut counts)
}
