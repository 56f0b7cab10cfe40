//! Device buffers on the simulated device (feature `sim-device`, `DIST_SIM_DEVICE=1`):
//! the device path of every `Comm` op (argument checks, the op compared across ranks,
//! stream order, completion, deadline, abort) on CPU-only machines, with the suite that
//! `tests/nccl.rs` runs on GPUs. Real rank processes, world sizes 1 to 8.
// Entries here exercise the run-time checks: what the compile-time check cannot follow
// in them is expected (its warnings are `deprecated` uses; docs/static-checks.md).
#![allow(deprecated)]

use dist_runtime::prelude::*;
use dist_runtime::testing::SimBuf;
use dist_runtime::Launch;
use dist_tests::device::{device_deadline, device_mismatch, device_ops, device_p2p_deadline, Mem};
use std::time::Duration;

struct Sim;

impl Mem for Sim {
    type D = SimBuf<f32>;
    fn up(&self, v: &[f32]) -> Result<SimBuf<f32>, String> {
        Ok(SimBuf(v.to_vec()))
    }
    fn down(&self, d: &SimBuf<f32>) -> Result<Vec<f32>, String> {
        Ok(d.0.clone())
    }
}

#[spmd(unchecked)]
fn sim_ops(world: Comm<World>) -> Result<(), String> {
    if world.device_kind() != Some("sim") {
        return Err(format!("expected the simulated device, got {:?}", world.device_kind()));
    }
    device_ops(&world, &Sim)
}

#[spmd(unchecked)]
fn sim_mismatch(world: Comm<World>) -> Result<(), String> {
    device_mismatch(&world, &Sim)
}

#[spmd(unchecked)]
fn sim_deadline(world: Comm<World>) -> Result<(), String> {
    device_deadline(&world, &Sim, Duration::from_secs(4))
}

#[spmd(unchecked)]
fn sim_p2p_deadline(world: Comm<World>) -> Result<(), String> {
    device_p2p_deadline(&world, &Sim, Duration::from_secs(4), "timed out after")
}

// Wrong on purpose: rank 0 reaches a device collective, rank 1 waits for a host message
// rank 0 would send after it.
#[spmd(unchecked)]
fn sim_device_collective_against_host_recv(world: Comm<World>) -> dist_runtime::Result<()> {
    const T: Tag<f32> = Tag::new(2);
    if world.rank() == 0 {
        let mut d = SimBuf(vec![1.0f32; 4]);
        world.all_reduce(&mut d, ReduceOp::Sum)?; // @device-all-reduce
        world.send(1, T, &d.0[..1])
    } else {
        world.recv(0, T, &mut [0.0f32]) // @host-recv
    }
}

/// A device buffer on a communicator without a device side: a clear error.
#[spmd(unchecked)]
fn no_device_side(world: Comm<World>) -> Result<(), String> {
    let mut d = SimBuf(vec![1.0f32; 4]);
    match world.all_reduce(&mut d, ReduceOp::Sum) {
        Err(dist_runtime::Error::InvalidArgument { msg, .. }) if msg.contains("has no device side") => Ok(()),
        other => Err(format!("expected an error naming the missing device side, got {other:?}")),
    }
}

fn launch(entry: &str, n: usize, env: &[(&str, &str)]) -> dist_runtime::Report {
    let mut l = Launch::entry(entry, n).unwrap().capture(true).timeout(Duration::from_secs(120));
    for (k, v) in env {
        l = l.env(k, v);
    }
    l.run().unwrap()
}

#[test]
fn every_op_on_device_buffers_matches_the_serial_reference() {
    for n in [1, 2, 3, 4, 8] {
        let r = launch("device::sim_ops", n, &[("DIST_SIM_DEVICE", "1"), ("DIST_DEBUG", "check")]);
        assert!(r.success(), "{n} ranks:\n{}", r.summary());
    }
    // Without the per-op check too (the release default).
    let r = launch("device::sim_ops", 3, &[("DIST_SIM_DEVICE", "1"), ("DIST_DEBUG", "off")]);
    assert!(r.success(), "3 ranks, checks off:\n{}", r.summary());
}

#[test]
fn a_mismatched_device_collective_is_a_mismatch_error() {
    let r = launch("device::sim_mismatch", 2, &[("DIST_SIM_DEVICE", "1"), ("DIST_DEBUG", "check")]);
    assert!(r.success(), "{}", r.summary());
}

#[test]
fn a_device_wait_past_its_deadline_is_a_timeout_and_aborts() {
    let r =
        launch("device::sim_deadline", 2, &[("DIST_SIM_DEVICE", "1"), ("DIST_DEBUG", "off"), ("DIST_TIMEOUT", "1")]);
    assert!(r.success(), "{}", r.summary());
}

#[test]
fn a_device_send_without_its_receiver_is_a_timeout_and_aborts() {
    let r = launch(
        "device::sim_p2p_deadline",
        2,
        &[("DIST_SIM_DEVICE", "1"), ("DIST_DEBUG", "off"), ("DIST_TIMEOUT", "1")],
    );
    assert!(r.success(), "{}", r.summary());
}

#[test]
fn device_buffers_without_a_device_side_are_refused() {
    let r = launch("device::no_device_side", 2, &[]);
    assert!(r.success(), "{}", r.summary());
}

/// A device collective whose peer waits in a host op: with checks on, the collective is
/// compared across ranks on the host before it is enqueued, so the wait-for cycle is a
/// host one and the deadlock is named in about a second with both lines (with
/// `DIST_DEBUG=off`, or for device point-to-point, only the deadline ends such a wait:
/// docs/reliability.md).
#[test]
fn a_device_collective_against_a_host_wait_is_a_deadlock_named_at_once() {
    let r = launch(
        "device::sim_device_collective_against_host_recv",
        2,
        &[("DIST_SIM_DEVICE", "1"), ("DIST_DEBUG", "check"), ("DIST_TIMEOUT", "300")],
    );
    let all = r.summary();
    assert!(!r.success(), "{all}");
    let line = |tag: &str| {
        let src = include_str!("device.rs");
        let n = src.lines().position(|l| l.contains(tag) && !l.contains("line(")).expect("tagged line") + 1;
        format!("device.rs:{n}")
    };
    assert!(all.contains("deadlock detected"), "{all}");
    assert!(all.contains(&line("// @device-all-reduce")), "{all}");
    assert!(all.contains(&line("// @host-recv")), "{all}");
    assert!(r.elapsed < Duration::from_secs(20), "took {:?}: {all}", r.elapsed);
}
