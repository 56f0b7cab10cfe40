// Ranks that exchange a header with a neighbour and then refuse the run with their own
// error (odd world sizes past 1): the messages before the error pair up, so the check reports
// nothing; the sizes the program refuses are ones it does not support.
use dist_runtime::prelude::*;

const HEADER: Tag<u64> = Tag::new(2);

#[spmd]
fn main(world: Comm<World>) -> Result<(), String> {
    let (rank, size) = (world.rank(), world.size());
    let right = (rank + 1) % size;
    let left = (rank + size - 1) % size;
    let mut theirs = [0u64; 3];
    world.sendrecv(right, HEADER, &[rank as u64, size as u64, 7], left, &mut theirs).map_err(|e| e.to_string())?;
    if size > 1 && size % 2 == 1 {
        return Err(format!("the pairing scheme needs an even number of ranks, not {size}"));
    }
    let mut total = [theirs[0] as f64];
    world.all_reduce(&mut total, ReduceOp::Sum).map_err(|e| e.to_string())?;
    Ok(())
}
