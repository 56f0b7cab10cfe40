// The known NCCL group hang: rank 0's batch holds a send whose receive rank 1 posts
// outside any batch, after a barrier that waits for rank 0 (a batch completes only
// when every op in it has: rank 0 never reaches the barrier).
use dist_runtime::prelude::*;

const T: Tag<f32> = Tag::new(1);

#[spmd(ranks = 2)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let mine = [1.0f32; 4];
    let mut got = [0.0f32; 4];
    if world.rank() == 0 {
        world.batch(|b| {
            b.send(1, T, &mine);
        })?;
        world.barrier()?;
    } else {
        world.barrier()?;
        world.recv(0, T, &mut got)?;
    }
    Ok(())
}
