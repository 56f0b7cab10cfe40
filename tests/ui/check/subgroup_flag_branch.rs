// A pivot chosen in a sub-communicator: its rank 0 broadcasts a flag and a value, and every
// member branches on the flag (the same on every member after the broadcast, however each
// held the buffer before). The fallback all-reduce is reached by every member or none; a
// barrier only the sub-communicator's rank 1 calls afterwards is the bug.
use dist_runtime::prelude::*;

dist_runtime::group!(Half);

fn pivot(half: &Comm<Half>, keys: &[u64]) -> dist_runtime::Result<u64> {
    let mut msg = match keys.first() {
        Some(&m) if half.rank() == 0 => [1u64, m],
        _ => [0u64, 0],
    };
    half.broadcast(&mut msg, 0)?;
    if msg[0] == 1 {
        return Ok(msg[1]);
    }
    let mut m = [keys.last().copied().unwrap_or(0)];
    half.all_reduce(&mut m, ReduceOp::Max)?;
    Ok(m[0])
}

#[spmd(sizes = 4..=4)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let half = world.split::<Half>((world.rank() / 2) as u32, world.rank() as i64)?;
    let keys: Vec<u64> = (0..world.rank() as u64).collect();
    let p = pivot(&half, &keys)?;
    println!("pivot {p}");
    if half.rank() == 1 {
        half.barrier()?;
    }
    Ok(())
}
