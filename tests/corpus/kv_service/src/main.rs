//! A hash-partitioned key-value store on every rank: each rank is a client (puts, then
//! gets, batched per owner and sent without blocking) and a server (a loop over requests
//! from any rank). The result is checked against one `HashMap`.
//!
//! cargo spmd run -n 4 -- --puts 300 --gets 200 --keys 500 --seed 3

mod client;
mod protocol;
mod server;
mod verify;
mod workload;

use dist_runtime::prelude::*;
use dist_runtime::wait_all;

use server::Server;
use workload::{checksum, gets_of, puts_of, Options};

type BoxResult<T> = std::result::Result<T, Box<dyn std::error::Error>>;

#[spmd]
fn main(world: Comm<World>) -> BoxResult<()> {
    let opts = Options::from_args()?;
    let (rank, n) = (world.rank(), world.size());
    let mut server = Server::new(&world);

    // Phase 1: puts. Post every batch, serve until all ranks are done, then wait.
    let puts = puts_of(rank, &opts);
    let plan = client::put_plan(&puts, n);
    let sends = client::post_all(&world, &plan)?;
    server.serve_phase()?;
    wait_all(sends)?;
    // No get may overtake a put still in flight to its server.
    world.barrier()?;

    // Phase 2: gets. Replies are received into buffers posted before the requests leave.
    let keys = gets_of(rank, &opts);
    let (plan, pending) = client::get_plan(&keys, n);
    let mut replies: Vec<Vec<u64>> = pending.iter().map(|p| vec![0; p.keys.len()]).collect();
    let reply_reqs = client::post_replies(&world, &pending, &mut replies)?;
    let sends = client::post_all(&world, &plan)?;
    server.serve_phase()?;
    wait_all(sends)?;
    wait_all(reply_reqs)?;

    let looked_up: Vec<(u64, u64)> =
        pending.iter().zip(&replies).flat_map(|(p, vals)| p.keys.iter().copied().zip(vals.iter().copied())).collect();
    let client_sum = checksum(looked_up.iter().map(|(k, v)| (k, v)));
    let store_sum = checksum(server.store.iter());

    // Global check: counts summed everywhere, checksums gathered on rank 0.
    let mut counts = [server.puts_applied, server.gets_served, server.store.len() as u64];
    world.all_reduce(&mut counts, ReduceOp::Sum)?;
    let want_counts = [(n * opts.puts) as u64, (n * opts.gets) as u64];
    if counts[..2] != want_counts {
        return Err(format!("served {:?} puts/gets, expected {want_counts:?}", &counts[..2]).into());
    }
    let mine = [client_sum, store_sum];
    if rank == 0 {
        let mut all = vec![0u64; 2 * n];
        world.gather(&mine, Some(&mut all), 0)?;
        let want = verify::serial(&opts, n);
        for r in 0..n {
            if all[2 * r] != want.client_sums[r] {
                return Err(format!("rank {r}: lookups differ from the serial store").into());
            }
            if all[2 * r + 1] != want.store_sums[r] {
                return Err(format!("rank {r}: its partition differs from the serial store").into());
            }
        }
        if counts[2] != want.distinct_keys {
            return Err(format!("{} keys stored, the serial store has {}", counts[2], want.distinct_keys).into());
        }
        println!("{} puts, {} gets, {} keys on {n} ranks match the serial store", counts[0], counts[1], counts[2]);
        println!("OK");
    } else {
        world.gather(&mine, None, 0)?;
    }
    Ok(())
}
