//! A dynamic work pool over a deterministic task tree: ranks start with a block of root
//! tasks, steal from each other when idle and detect termination with Safra's token ring;
//! the tasks executed and their checksum are checked against a serial walk of the tree.
//! `cargo spmd run -n 4 -- [--seed S] [--roots R] [--depth D] [--work W] [--chunk C] [--sweeps K]`

mod config;
mod msg;
mod task;
mod worker;

use dist_runtime::prelude::*;

use config::Config;
use task::{Summary, serial_reference};
use worker::Worker;

/// Errors of every kind (comm failures, bad flags, protocol violations, mismatches).
pub type Res<T> = Result<T, Box<dyn std::error::Error>>;

#[spmd]
fn main(world: Comm<World>) -> Res<()> {
    let cfg = Config::from_args(std::env::args().skip(1))?;
    let (rank, size) = (world.rank(), world.size());

    let start = std::time::Instant::now();
    let share = cfg.initial_share(rank, size);
    let stats = Worker::new(world.clone(), cfg.clone(), share).run()?;
    let elapsed = start.elapsed();

    let s = &stats;
    let mut totals = [s.summary.executed, s.summary.checksum, s.steals_ok, s.steals_failed, s.tasks_in, s.tasks_out];
    world.all_reduce(&mut totals, ReduceOp::Sum)?;
    let [executed, checksum, steals_ok, steals_failed, tasks_in, tasks_out] = totals;

    let mut per_rank = vec![0u64; size];
    let mine = [stats.summary.executed];
    world.gather(&mine[..], (rank == 0).then_some(&mut per_rank[..]), 0)?;

    if rank == 0 {
        let want = serial_reference(&cfg);
        let got = Summary { executed, checksum };
        if got != want {
            return Err(format!("pool ran {got:?}, serial walk {want:?}").into());
        }
        if tasks_in != tasks_out {
            return Err(format!("{tasks_out} tasks given away, {tasks_in} received").into());
        }
        println!("tasks per rank: {per_rank:?}");
        println!("steals: {steals_ok} ok, {steals_failed} refused, {tasks_in} tasks moved; {elapsed:.1?}");
        println!("OK: {executed} tasks, checksum {checksum:#018x} match the serial walk on {size} ranks");
    }
    Ok(())
}
