// A checkpoint gathered to rank 0, where the other ranks pass the grid's corner as the
// root: at size 2 that is rank 1 itself, which then passes `None` as a root must not.
// The error is the roots that differ, not the buffer rank 1's own root asked for.
use dist_runtime::prelude::*;

#[spmd(sizes = 2..=4)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let n = world.size();
    let shard = vec![world.rank() as u32; 2];
    let counts = vec![2usize; n];
    if world.rank() == 0 {
        let mut all = vec![0u32; 2 * n];
        world.gather_v(&shard, Some(&mut all), &counts, 0)?;
    } else {
        world.gather_v(&shard, None, &counts, n - 1)?;
    }
    Ok(())
}
