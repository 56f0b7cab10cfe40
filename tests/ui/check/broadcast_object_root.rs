// `broadcast_object` takes the value on its root only: rank 0 gives it while the root
// is the last rank, which the runtime refuses on every rank. An error at the call.
use dist_runtime::prelude::*;

#[spmd(sizes = 2..=4)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let n = world.size();
    let state = (world.rank() == 0).then(|| vec![1u64, 2, 3]);
    let got: Vec<u64> = world.broadcast_object(state, n - 1)?;
    assert_eq!(got.len(), 3);
    Ok(())
}
