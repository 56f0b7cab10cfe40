// A worker's header taken by a receive from any source, then its body by a named
// receive, on one tag; then the program's own error at world sizes it refuses. The
// messages pair up (the header with the header): nothing to report.
use dist_runtime::prelude::*;

const MSG: Tag<u64> = Tag::new(4);

#[spmd]
fn main(world: Comm<World>) -> Result<(), String> {
    let (rank, size) = (world.rank(), world.size());
    let err = |e: dist_runtime::Error| e.to_string();
    if size == 2 {
        if rank == 0 {
            let mut header = [0u64; 2];
            let st = world.recv_any(MSG, &mut header).map_err(err)?;
            let mut body = [0u64; 8];
            world.recv(st.source, MSG, &mut body).map_err(err)?;
        } else {
            world.send(0, MSG, &[1, 8]).map_err(err)?;
            world.send(0, MSG, &[7; 8]).map_err(err)?;
        }
        if rank == 0 {
            return Err("two ranks are one too few for the workers' pool".into());
        }
    }
    Ok(())
}
