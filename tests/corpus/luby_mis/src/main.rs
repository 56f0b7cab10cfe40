//! Luby's maximal independent set on a random graph whose vertices are block
//! distributed over the ranks. Rank 0 gathers the set, checks that it is independent
//! and maximal, and that a serial run with the same priorities finds the same set.

mod config;
mod graph;
mod mis;
mod priority;
mod reference;

use std::error::Error;

use dist_runtime::prelude::*;

use config::Options;
use graph::{BlockPartition, LocalGraph};
use mis::LubyMis;

#[spmd]
fn main(world: Comm<World>) -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opts = Options::parse(&args)?;
    let (rank, size) = (world.rank(), world.size());

    let part = BlockPartition::new(opts.vertices, size);
    let graph = LocalGraph::build(&opts, &part, rank);
    let mut solver = LubyMis::new(world.clone(), part.clone(), graph, opts.seed)?;
    solver.run(opts.max_rounds)?;

    let mine = solver.membership();
    let counts = part.counts();
    let mut members = [mine.iter().map(|&m| m as u64).sum::<u64>()];
    world.all_reduce(&mut members, ReduceOp::Sum)?;

    if rank != 0 {
        world.gather_v(&mine, None, &counts, 0)?;
        return Ok(());
    }
    let mut in_set = vec![0u8; opts.vertices];
    world.gather_v(&mine, Some(&mut in_set[..]), &counts, 0)?;

    let edges = graph::edges(&opts);
    let adj = graph::adjacency(opts.vertices, &edges);
    reference::independent(&adj, &in_set)?;
    reference::maximal(&adj, &in_set)?;
    let serial = reference::luby(&adj, opts.seed, opts.max_rounds).ok_or("serial run did not finish")?;
    if serial.in_set != in_set {
        let v = (0..opts.vertices).find(|&v| serial.in_set[v] != in_set[v]).unwrap_or(0);
        return Err(format!("vertex {v}: distributed says {}, serial says {}", in_set[v], serial.in_set[v]).into());
    }
    if serial.rounds != solver.rounds {
        return Err(format!("{} rounds, serial took {}", solver.rounds, serial.rounds).into());
    }
    let (sent, _) = solver.boundary_sizes();
    println!(
        "OK luby_mis ranks={size} vertices={} edges={} mis={} rounds={} boundary_sent_per_round={sent}",
        opts.vertices,
        edges.len(),
        members[0],
        solver.rounds
    );
    Ok(())
}
