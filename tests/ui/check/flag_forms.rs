// A flag from the command line picks how the ring shifts: a batch of isend/irecv or one
// sendrecv. Every rank reads the same command line, so both forms are checked; the
// batched one forgets the receive on rank 0.
use dist_runtime::prelude::*;

const KV: Tag<f32> = Tag::new(7);

#[spmd(sizes = 2..=3)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let batched = std::env::args().any(|a| a == "--batched");
    let (r, n) = (world.rank(), world.size());
    let (next, prev) = ((r + 1) % n, (r + n - 1) % n);
    let mut kv = [0.0f32; 4];
    if batched {
        world.batch(|b| {
            b.send(next, KV, &[1.0; 4]);
            if r != 0 {
                b.recv(prev, KV, &mut kv);
            }
        })?;
    } else {
        world.sendrecv(next, KV, &[1.0; 4], prev, &mut kv)?;
    }
    Ok(())
}
