//! Hand-written all-reduce (ring, binomial tree, recursive doubling) and binomial-tree
//! broadcast over point-to-point messages, checked against dist's own collectives and
//! a serial sum.
//!
//! `cargo spmd run -n 4 -- --algo all --len 1001 --p2p parity`

mod config;
mod rd;
mod ring;
mod tree;
mod verify;

use config::Config;
use dist_runtime::prelude::*;
use ring::HandCollectives;

fn err(e: dist_runtime::Error) -> String {
    e.to_string()
}

#[spmd]
fn main(world: Comm<World>) -> Result<(), String> {
    let cfg = Config::from_args(std::env::args().skip(1))?;
    let (n, me) = (world.size(), world.rank());
    let algos = cfg.algo.resolve(n, cfg.len);
    let root = cfg.root.unwrap_or(n - 1) % n;
    let mut hc = HandCollectives::new(&world, cfg.mode);
    let mut problems = Vec::new();

    for it in 0..cfg.iters {
        let seed = cfg.seed + it as u64;
        let data = verify::rank_data(me, cfg.len, seed);
        let serial = verify::serial_sum(n, cfg.len, seed);
        let reference = verify::library_all_reduce(&world, &data).map_err(err)?;
        if let Some(i) = verify::first_mismatch(&reference, &serial) {
            problems.push(format!("iter {it}: dist's all_reduce differs from the serial sum at {i}"));
        }
        for &algo in &algos {
            let mut buf = data.clone();
            hc.all_reduce(algo, &mut buf).map_err(err)?;
            if let Some(i) = verify::first_mismatch(&buf, &reference) {
                problems.push(format!("iter {it}: {algo:?} all-reduce differs at element {i}"));
            }
        }
        let mut mine = if me == root { data.clone() } else { vec![0.0; cfg.len] };
        hc.tree_broadcast(&mut mine, root).map_err(err)?;
        let theirs = verify::library_broadcast(&world, &data, root).map_err(err)?;
        if let Some(i) = verify::first_mismatch(&mine, &theirs) {
            problems.push(format!("iter {it}: tree broadcast from {root} differs at element {i}"));
        }
    }

    let mut bad = [problems.len() as u64];
    world.all_reduce(&mut bad, ReduceOp::Sum).map_err(err)?;
    if !problems.is_empty() {
        return Err(format!("rank {me}: {}", problems.join("; ")));
    }
    if bad[0] > 0 {
        return Err(format!("rank {me}: {} problems on other ranks", bad[0]));
    }
    let mut msgs = [hc.messages as u64];
    world.reduce(&mut msgs, ReduceOp::Sum, 0).map_err(err)?;
    if me == 0 {
        println!(
            "hand_ring_allreduce: {algos:?} on {n} ranks, len {}, {} iters, {} messages, broadcast root {root}: OK",
            cfg.len, cfg.iters, msgs[0]
        );
    }
    Ok(())
}
