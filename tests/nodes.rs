//! torchrun-style multi-node launch, with two "nodes" on this host: one launcher per node
//! (`Launch::nodes`, as `cargo spmd run --nnodes 2 --node-rank k --master-addr A
//! --master-port P`), node 0 hosting the job's store. Two nodes on one host form one
//! shared-memory job; a failure on one node stops the other's ranks; launchers that
//! disagree on the job's shape, or a node that never comes, are errors before any rank
//! runs.
// Entries here exercise the run-time checks: what the compile-time check cannot follow
// in them is expected (its warnings are `deprecated` uses; docs/static-checks.md).
#![allow(deprecated)]

use dist_runtime::prelude::*;
use dist_runtime::{Launch, Nodes, Report};
use std::time::Duration;

/// Every rank checks its place from the environment the launchers gave it, then the
/// world works across the two launchers' ranks.
#[spmd]
fn placed(world: Comm<World>) -> dist_runtime::Result<()> {
    let var = |k: &str| std::env::var(k).unwrap().parse::<usize>().unwrap();
    let (node, local, per_node) = (var("GROUP_RANK"), var("LOCAL_RANK"), var("LOCAL_WORLD_SIZE"));
    assert_eq!(world.rank(), node * per_node + local);
    assert_eq!(world.size(), var("GROUP_WORLD_SIZE") * per_node);
    let n = world.size();
    let mut sum = [world.rank() as u64 + 1];
    world.all_reduce(&mut sum, ReduceOp::Sum)?;
    assert_eq!(sum[0], (n * (n + 1) / 2) as u64);
    let mut all = vec![0u32; n];
    world.all_gather(&[world.rank() as u32 * 10], &mut all)?;
    assert_eq!(all, (0..n as u32).map(|r| r * 10).collect::<Vec<_>>());
    println!("rank {} of {n} on node {node} (local rank {local})", world.rank());
    Ok(())
}

/// The last rank fails at once; every other rank would sleep for a minute before its
/// barrier, so only the launchers' cross-node stop ends the job quickly.
#[spmd]
fn last_rank_fails(world: Comm<World>) -> Result<(), String> {
    if world.rank() == world.size() - 1 {
        return Err("the last rank fails on purpose".into());
    }
    std::thread::sleep(Duration::from_secs(60));
    world.barrier().map_err(|e| e.to_string())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// On DIST_BACKEND=mpi mpirun starts every rank of a job itself (no per-node launchers).
fn skip_on_mpi() -> bool {
    let mpi = std::env::var("DIST_BACKEND").is_ok_and(|b| b.eq_ignore_ascii_case("mpi"));
    if mpi {
        eprintln!("skipped on DIST_BACKEND=mpi: mpirun starts the ranks of every host");
    }
    mpi
}

fn node(entry: &str, per_node: usize, nnodes: usize, node_rank: usize, port: u16, timeout: f64) -> Launch {
    Launch::entry(&format!("nodes::{entry}"), per_node)
        .unwrap()
        .capture(true)
        .env("RUST_BACKTRACE", "0")
        .timeout(Duration::from_secs_f64(timeout))
        .nodes(Nodes { nnodes, node_rank, master_addr: "127.0.0.1".into(), master_port: port })
}

/// Runs every node's launcher at once (node 0 on this thread) and returns their results.
fn run_nodes(launches: Vec<Launch>) -> Vec<dist_runtime::Result<Report>> {
    let mut it = launches.into_iter();
    let first = it.next().unwrap();
    let others: Vec<_> = it.map(|l| std::thread::spawn(move || l.run())).collect();
    let mut out = vec![first.run()];
    out.extend(others.into_iter().map(|h| h.join().unwrap()));
    out
}

#[test]
fn two_nodes_on_one_host_form_one_job() {
    if skip_on_mpi() {
        return;
    }
    for (nnodes, per_node) in [(2, 2), (3, 1), (2, 3)] {
        let port = free_port();
        let reports = run_nodes((0..nnodes).map(|k| node("placed", per_node, nnodes, k, port, 60.0)).collect());
        for (k, r) in reports.into_iter().enumerate() {
            let r = r.unwrap();
            assert!(r.success(), "node {k} of {nnodes}: {}", r.summary());
            let ranks: Vec<usize> = r.ranks.iter().map(|x| x.rank).collect();
            assert_eq!(ranks, (k * per_node..(k + 1) * per_node).collect::<Vec<_>>());
            for x in &r.ranks {
                let line = format!(
                    "rank {} of {} on node {k} (local rank {})",
                    x.rank,
                    nnodes * per_node,
                    x.rank - k * per_node
                );
                assert!(x.output.contains(&line), "{}", x.output);
            }
        }
    }
}

#[test]
fn a_failure_on_one_node_stops_every_node() {
    if skip_on_mpi() {
        return;
    }
    let port = free_port();
    let start = std::time::Instant::now();
    let reports = run_nodes((0..2).map(|k| node("last_rank_fails", 2, 2, k, port, 90.0)).collect());
    let took = start.elapsed();
    let (n0, n1) = (reports[0].as_ref().unwrap(), reports[1].as_ref().unwrap());
    // Node 1 holds the cause.
    let i = n1.first_failure.expect("node 1 names its failing rank");
    assert_eq!((n1.ranks[i].rank, n1.ranks[i].code), (3, Some(1)), "{}", n1.summary());
    assert!(n1.ranks[i].output.contains("the last rank fails on purpose"), "{}", n1.summary());
    // Node 0's ranks were stopped, and its report names the other node's rank.
    assert!(!n0.success());
    let remote =
        n0.remote_failure.as_deref().unwrap_or_else(|| panic!("node 0 names no remote failure: {}", n0.summary()));
    assert!(remote.contains("node 1") && remote.contains("rank 3") && remote.contains("exit code 1"), "{remote}");
    assert!(n0.summary().contains("a rank on another node failed first"), "{}", n0.summary());
    assert!(took < Duration::from_secs(30), "the job took {took:?}: the ranks of node 0 were not stopped");
}

#[test]
fn launchers_that_disagree_on_the_shape_fail_before_any_rank_runs() {
    if skip_on_mpi() {
        return;
    }
    let port = free_port();
    let reports = run_nodes(vec![node("placed", 2, 2, 0, port, 30.0), node("placed", 3, 2, 1, port, 30.0)]);
    for r in reports {
        let e = r.map(|r| r.summary()).unwrap_err().to_string();
        assert!(e.contains("disagree on the job's shape") && e.contains("--nproc-per-node"), "{e}");
    }
}

#[test]
fn a_node_that_never_joins_is_an_error_naming_the_flags() {
    if skip_on_mpi() {
        return;
    }
    let e = node("placed", 2, 2, 0, free_port(), 2.0).run().map(|r| r.summary()).unwrap_err().to_string();
    assert!(e.contains("not every node joined") && e.contains("1 of 2"), "{e}");
}

#[test]
fn bad_node_flags_are_errors() {
    let port = free_port();
    let e = node("placed", 2, 2, 2, port, 5.0).run().map(|r| r.summary()).unwrap_err().to_string();
    assert!(e.contains("--node-rank 2 is out of range for --nnodes 2"), "{e}");
    let e = node("placed", 2, 2, 0, 0, 5.0).run().map(|r| r.summary()).unwrap_err().to_string();
    assert!(e.contains("--master-port 0"), "{e}");
    // Two launchers claiming one node rank.
    if skip_on_mpi() {
        return;
    }
    let reports = run_nodes(vec![
        node("placed", 1, 3, 0, port, 5.0),
        node("placed", 1, 3, 1, port, 5.0),
        node("placed", 1, 3, 1, port, 5.0),
    ]);
    let errs: Vec<String> = reports.into_iter().filter_map(|r| r.err()).map(|e| e.to_string()).collect();
    assert!(errs.iter().any(|e| e.contains("already joined this job as --node-rank 1")), "{errs:?}");
}
