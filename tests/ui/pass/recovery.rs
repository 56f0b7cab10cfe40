// The recovery pattern is ordinary code to the check (no warning): an op whose
// `Err(PeerFailed | Revoked)` arm shrinks the communicator and retries, an agreement
// before a step is kept, and the survivors' resumption point agreed by a collective.
// The check proves the run where no rank dies; the recovery arm is the run time's.
#![deny(deprecated)]
use dist_runtime::prelude::*;
use dist_runtime::Error;

#[spmd(sizes = 1..=8)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let mut comm = world;
    let (mut done, mut total) = (0u64, 0u64);
    while done < 10 {
        let mut x = [done + 1];
        match comm.all_reduce(&mut x, ReduceOp::Max) {
            Ok(()) => {
                total += x[0];
                done += 1;
            }
            Err(Error::PeerFailed { .. } | Error::Revoked { .. }) => {
                comm.revoke()?;
                assert!(!comm.failed_ranks()?.is_empty());
                comm = comm.shrink()?;
                let mut at = [done];
                comm.all_reduce(&mut at, ReduceOp::Min)?;
                done = at[0];
            }
            Err(e) => return Err(e),
        }
    }
    // Did every live rank get there? The same answer on each of them.
    let (all_ok, gone) = comm.agree(total == 55)?;
    if !all_ok || !gone.is_empty() {
        return Err(Error::Env(format!("not every rank summed to 55 (gone: {gone:?})")));
    }
    let survivors = comm.shrink()?;
    survivors.barrier()
}
