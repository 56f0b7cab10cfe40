// A non-blocking scatter_v whose root is out of range at 2 ranks.
use dist_runtime::prelude::*;

#[spmd(ranks = 2)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let counts = [1, 1];
    let data = [1u8, 2];
    let mut mine = [0u8];
    let send = if world.rank() == 0 { Some(&data[..]) } else { None };
    world.scatter_v_async(send, &mut mine, &counts, 2)?.wait()?;
    Ok(())
}
