//! Distributed level-synchronous BFS with all_to_all_v frontier exchange, checked
//! against a serial BFS of the same generated graph.
//!
//! cargo spmd run -n 4 -- --vertices 203 --degree 2 --source 17

mod bfs;
mod exchange;
mod graph;

use dist_runtime::prelude::*;

use graph::{generate_edges, LocalGraph, Partition};

struct Args {
    vertices: usize,
    degree: usize,
    source: u64,
    seed: u64,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args { vertices: 150, degree: 2, source: 0, seed: 3 };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    for kv in argv.chunks(2) {
        let [flag, value] = kv else { return Err(format!("{} needs a value", kv[0])) };
        let num = value.parse::<u64>().map_err(|_| format!("bad value {value:?} for {flag}"))?;
        match flag.as_str() {
            "--vertices" => args.vertices = num as usize,
            "--degree" => args.degree = num as usize,
            "--source" => args.source = num,
            "--seed" => args.seed = num,
            _ => return Err(format!("unknown argument {flag}")),
        }
    }
    if args.source as usize >= args.vertices {
        return Err(format!("--source {} is not a vertex of 0..{}", args.source, args.vertices));
    }
    Ok(args)
}

#[spmd]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let args = parse_args().map_err(dist_runtime::Error::Env)?;
    let part = Partition { nv: args.vertices, parts: world.size() };
    let edges = generate_edges(args.vertices, args.degree, args.seed);
    let (lo, hi) = part.range(world.rank());
    let local = LocalGraph::build(&edges, lo, hi);

    let mut search = bfs::DistBfs::new(&world, part, &local);
    let levels = search.run(args.source)?;
    let gathered = search.gather(0)?;

    let mut bad = [0u64];
    if let Some(dist) = &gathered {
        let full = LocalGraph::build(&edges, 0, args.vertices);
        let want = bfs::serial_bfs(&full, args.vertices, args.source);
        bad[0] = dist.iter().zip(&want).filter(|(a, b)| a != b).count() as u64;
        let depth = want.iter().copied().max().unwrap_or(0);
        // the last level is the one that found nothing new
        if levels as i64 != depth + 1 {
            bad[0] += 1;
        }
    }
    world.broadcast(&mut bad, 0)?;
    if bad[0] != 0 {
        return Err(dist_runtime::Error::Mismatch {
            comm: "World".into(),
            msg: format!("distributed BFS disagrees with the serial BFS on {} vertices", bad[0]),
        });
    }
    if let Some(dist) = gathered {
        let reached = dist.iter().filter(|&&d| d != bfs::UNREACHED).count();
        let (sent, received) = search.traffic();
        println!(
            "OK bfs_frontier: {} ranks, {} vertices, {} edges, {reached} reached in {} levels (rank 0 sent {sent}, received {received})",
            world.size(),
            args.vertices,
            edges.len(),
            levels - 1
        );
    }
    Ok(())
}
