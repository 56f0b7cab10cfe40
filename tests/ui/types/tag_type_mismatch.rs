use dist_runtime::prelude::*;

const ACT: Tag<f32> = Tag::new(1);

#[spmd(ranks = 2)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    if world.rank() == 0 {
        world.send(1, ACT, &[1.0f32; 4])
    } else {
        let mut counts = vec![0i32; 4];
        world.recv(0, ACT, &mut counts)
    }
}
