//! Non-blocking p2p, as the tutorial: rank 0 `isend`s a tensor to every other rank,
//! each `irecv`s it, and both do other work before `wait()`. The request borrows the
//! buffer, so touching it before `wait()` does not compile.
//!
//! `cargo xtask run -n 4 --example p2p_async`

use dist_runtime::prelude::*;

const T: Tag<f32> = Tag::new(1);

fn busy_work(k: u64) -> u64 {
    (0..k).fold(0u64, |a, x| a.wrapping_mul(31).wrapping_add(x))
}

#[spmd(strict)]
fn main(world: Comm<World>) -> Result<(), String> {
    let (r, n) = (world.rank(), world.size());
    let err = |e: dist_runtime::Error| e.to_string();
    let mut tensor = vec![0.0f32; 4];
    if r == 0 {
        tensor = vec![1.0, 2.0, 3.0, 4.0];
        let mut reqs = Vec::new();
        for dst in 1..n {
            reqs.push(world.isend(dst, T, &tensor).map_err(err)?);
        }
        let w = busy_work(100_000); // overlaps with the sends
        dist_runtime::wait_all(reqs).map_err(err)?;
        println!("rank 0 sent {tensor:?} to {} ranks (work done meanwhile: {w:x})", n - 1);
    } else {
        let req = world.irecv(0, T, &mut tensor).map_err(err)?;
        let w = busy_work(100_000); // overlaps with the receive
        req.wait().map_err(err)?;
        if tensor != [1.0, 2.0, 3.0, 4.0] {
            return Err(format!("rank {r} received {tensor:?}"));
        }
        println!("rank {r} received {tensor:?} (work done meanwhile: {w:x})");
    }
    Ok(())
}
