// A program with a recovery arm is still checked on its ordinary path: here the even
// ranks' all_reduce meets the odd ranks' broadcast on the communicator a shrink made.
use dist_runtime::prelude::*;
use dist_runtime::Error;

#[spmd(sizes = 2..=4)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let mut x = [1.0f32; 4];
    let comm = match world.barrier() {
        Ok(()) => world.shrink()?,
        Err(Error::PeerFailed { .. }) => world.shrink()?,
        Err(e) => return Err(e),
    };
    if comm.rank() % 2 == 0 {
        comm.all_reduce(&mut x, ReduceOp::Sum)?;
    } else {
        comm.broadcast(&mut x, 0)?;
    }
    Ok(())
}
