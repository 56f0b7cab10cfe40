//! Master/worker prime counting: rank 0 deals out ranges, workers count the primes in
//! them and ask for more, then everybody reports to rank 0, which checks the total
//! against a sieve.
//!
//! `cargo spmd run -n 4 -- --limit 300000 --chunk 4000`

mod cli;
mod farm;
mod tasks;

use dist_runtime::prelude::*;
use farm::{Master, Tally};

dist_runtime::group!(Crew);

#[spmd]
fn main(world: Comm<World>) -> Result<(), String> {
    let args = cli::parse()?;
    let err = |e: dist_runtime::Error| e.to_string();
    let (rank, size) = (world.rank(), world.size());
    let jobs = tasks::make_tasks(args.limit, args.chunk);
    let n_jobs = jobs.len() as u64;

    let started = std::time::Instant::now();
    let mut book = None;
    let tally: Tally = if rank == 0 {
        let mut master = Master::new(&world, jobs);
        let t = master.run().map_err(err)?;
        book = Some((master.found, master.handed));
        t
    } else {
        farm::work(&world).map_err(err)?
    };
    let elapsed = started.elapsed();

    // The workers compare loads among themselves; the master sits in a crew of its own.
    let crew = world.split::<Crew>(u32::from(rank != 0), rank as i64).map_err(err)?;
    if rank != 0 {
        let mut most = [tally.tasks_done];
        crew.all_reduce(&mut most, ReduceOp::Max).map_err(err)?;
        let mut least = [tally.tasks_done];
        crew.all_reduce(&mut least, ReduceOp::Min).map_err(err)?;
        if crew.rank() == 0 && !args.quiet {
            println!("{} workers took between {} and {} tasks each", crew.size(), least[0], most[0]);
        }
    }

    // Everybody reports to rank 0 what it did.
    let mut per_rank = vec![0u64; size];
    per_rank[rank] = tally.tasks_done;
    world.reduce(&mut per_rank, ReduceOp::Sum, 0).map_err(err)?;
    let mut primes = [tally.primes];
    world.reduce(&mut primes, ReduceOp::Sum, 0).map_err(err)?;

    let mut verdict = [1u8];
    if let Some((found, handed)) = book {
        let want = tasks::sieve_count(args.limit);
        let reported: u64 = found.iter().flatten().sum();
        let missing = found.iter().filter(|f| f.is_none()).count();
        let done: u64 = per_rank.iter().sum();
        let counts_agree = size == 1 || per_rank[1..] == handed[1..];
        let mut problems = Vec::new();
        if missing > 0 {
            problems.push(format!("{missing} tasks never reported"));
        }
        if done != n_jobs {
            problems.push(format!("{done} tasks done, {n_jobs} handed out"));
        }
        if !counts_agree {
            problems.push(format!("workers report {:?} tasks, master handed {:?}", &per_rank[1..], &handed[1..]));
        }
        let total = if size == 1 { primes[0] } else { reported };
        if total != want || (size > 1 && primes[0] != want) {
            problems.push(format!("counted {total} primes (workers' sum {}), the sieve says {want}", primes[0]));
        }
        if !args.quiet {
            println!("{n_jobs} tasks over {size} ranks in {elapsed:.1?}; tasks per rank {per_rank:?}");
            println!("primes below {}: {total}", args.limit);
        }
        for p in &problems {
            eprintln!("check failed: {p}");
        }
        verdict[0] = problems.is_empty() as u8;
    }
    world.broadcast(&mut verdict, 0).map_err(err)?;
    if verdict[0] == 0 {
        return Err(format!("rank {rank}: the farm's count is wrong"));
    }
    if rank == 0 {
        println!("OK");
    }
    Ok(())
}
