//! A blocking chain: rank 0 sends [100, 200] to rank 1, every rank doubles what it gets
//! and passes it on; the last rank checks the result.
//!
//! `cargo xtask run -n 3 --example p2p_chain`

use dist_runtime::prelude::*;

const CHAIN: Tag<i64> = Tag::new(1);

#[spmd(strict)]
fn main(world: Comm<World>) -> Result<(), String> {
    let (r, n) = (world.rank(), world.size());
    let mut data = [100i64, 200];
    if r > 0 {
        world.recv(r - 1, CHAIN, &mut data).map_err(|e| e.to_string())?;
        println!("rank {r} received {data:?} from rank {}", r - 1);
        for x in data.iter_mut() {
            *x *= 2;
        }
    }
    if r + 1 < n {
        world.send(r + 1, CHAIN, &data).map_err(|e| e.to_string())?;
        println!("rank {r} sent {data:?} to rank {}", r + 1);
    } else {
        let f = 1i64 << (n - 1);
        let want = [100 * f, 200 * f];
        if data != want {
            return Err(format!("chain ended with {data:?}, expected {want:?}"));
        }
        println!("chain of {n} ranks ended with {data:?}");
    }
    Ok(())
}
