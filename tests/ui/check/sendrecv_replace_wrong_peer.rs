// A shift in place whose receive names the same neighbour as its send: rank 0 waits for
// rank 1, which sends to rank 2. The received block is then summed across the ranks.
use dist_runtime::prelude::*;

const SHIFT: Tag<f64> = Tag::new(3);

#[spmd]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let (r, n) = (world.rank(), world.size());
    let mut block = vec![r as f64; 64];
    world.sendrecv_replace((r + 1) % n, SHIFT, &mut block, (r + 1) % n)?;
    world.all_reduce(&mut block, ReduceOp::Sum)?;
    Ok(())
}
