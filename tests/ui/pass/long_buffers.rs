// Buffers too long to hold item by item: lengths the check knows where it built them
// (`vec![x; k]`), and forgets once they may have changed (grown, emptied by
// `mem::take`); none of these is an error. (The check cannot follow the messages a rank
// sends itself under a condition on its own data, `pending.len() > 0`: it says so in a
// warning, allowed here.)
#![allow(deprecated)]
use dist_runtime::prelude::*;

const ROW: Tag<f64> = Tag::new(1);

#[spmd]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let nx = 3000;
    let (rank, size) = (world.rank(), world.size());
    let right = (rank + 1) % size;
    let left = (rank + size - 1) % size;
    // The same length on both sides.
    let edge = vec![rank as f64; nx];
    let mut ghost = vec![0.0; nx];
    world.sendrecv(right, ROW, &edge, left, &mut ghost)?;
    assert_eq!(ghost.len(), nx);
    // Grown by one on the sender, received into one more on the receiver.
    let mut grown = vec![1.0; nx];
    grown.push(2.0);
    let mut wide = vec![0.0; nx + 1];
    world.sendrecv(right, ROW, &grown, left, &mut wide)?;
    // Emptied by `mem::take`: no longer 3000 long, so nothing is sent here.
    let mut pending = vec![2.0; nx];
    let batch = std::mem::take(&mut pending);
    if pending.len() > 0 {
        world.send(right, ROW, &pending)?;
    }
    assert!(!batch.is_empty());
    let mut got = vec![0.0; batch.len()];
    world.sendrecv(right, ROW, &batch, left, &mut got)?;
    // Collectives on long buffers of one length.
    let mut sums = vec![1.0; 2 * nx];
    world.all_reduce(&mut sums, ReduceOp::Sum)?;
    Ok(())
}
