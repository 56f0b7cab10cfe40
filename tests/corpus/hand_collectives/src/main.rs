//! Hand-written collectives over point-to-point messages (binomial broadcast and
//! reduce, recursive-doubling all-reduce, ring all-gather), each checked against dist's
//! built-in collective and a serial answer, for several roots and lengths.
//!
//! `cargo spmd run -n 5 -- --root 2 --lens 0,1,7,33`

mod opts;
mod reference;
mod suite;
mod tree;

use dist_runtime::prelude::*;
use opts::Opts;
use suite::Suite;
use tree::Op;

#[spmd]
fn main(world: Comm<World>) -> Result<(), Box<dyn std::error::Error>> {
    let opts = Opts::parse()?;
    let n = world.size();
    let mut roots = vec![opts.root % n, n - 1, n / 2];
    roots.sort_unstable();
    roots.dedup();

    let mut suite = Suite::new(world.clone());
    for &len in &opts.lens {
        for &root in &roots {
            suite.broadcast(len, root)?;
            for op in [Op::Sum, Op::Max] {
                suite.reduce(len, root, op)?;
            }
        }
        for op in [Op::Sum, Op::Max, Op::Min] {
            suite.all_reduce(len, op)?;
        }
        suite.all_gather(len)?;
    }

    // Every rank reports how many of its checks failed; rank 0 decides.
    let mut bad = [suite.failures.len() as u64];
    world.all_reduce(&mut bad, ReduceOp::Sum)?;
    for f in suite.failures.iter().take(5) {
        eprintln!("{f}");
    }
    if bad[0] != 0 {
        return Err(format!("{} checks failed over all ranks", bad[0]).into());
    }
    if world.rank() == 0 {
        println!("{} checks per rank on {n} ranks, roots {roots:?}, lengths {:?}", suite.checks, opts.lens);
        println!("OK");
    }
    Ok(())
}
