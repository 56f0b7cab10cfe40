//! The NCCL backend on real GPUs: every device op against a serial reference computed
//! here. Needs a GPU, the driver and libnccl: run `scripts/gpu-check.sh` (the tests are
//! `#[ignore]`d, so `cargo test` on a machine without GPUs skips them). Ranks run on
//! distinct GPUs (NCCL does not allow two ranks on one device), so the sizes are those
//! of 1, 2, 4 and 8 that fit the visible devices.
#![cfg(feature = "nccl")]

use dist_runtime::prelude::*;
use dist_runtime::Launch;
use std::time::Duration;

dist_runtime::group!(Parity);
const RING: Tag<f32> = Tag::new(1);

fn e(x: impl std::fmt::Display) -> String {
    x.to_string()
}

fn close(what: &str, got: &[f32], want: &[f32]) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{what}: {} elements, expected {}", got.len(), want.len()));
    }
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        if (g - w).abs() > 1e-6 * w.abs().max(1.0) {
            return Err(format!("{what}: element {i} is {g}, expected {w}"));
        }
    }
    Ok(())
}

/// Every op of `DeviceComm` on this rank's GPU, checked against host arithmetic.
#[spmd]
fn device_ops(world: Comm<World>) -> Result<(), String> {
    let dev = world.device().map_err(e)?;
    let (r, n) = (world.rank(), world.size());
    let s = dev.stream().clone();
    let len = 1000 + 3; // not a multiple of most sizes
    let mine = |q: usize| -> Vec<f32> { (0..len).map(|i| (q * 1000 + i) as f32).collect() };

    for (op, name) in [
        (ReduceOp::Sum, "sum"),
        (ReduceOp::Max, "max"),
        (ReduceOp::Avg, "avg"),
        (ReduceOp::PreMulSum(0.5), "premulsum"),
    ] {
        let mut d = s.clone_htod(&mine(r)).map_err(e)?;
        dev.all_reduce(&mut d, op).map_err(e)?.wait().map_err(e)?;
        let want: Vec<f32> = (0..len)
            .map(|i| {
                let vals = (0..n).map(|q| mine(q)[i]);
                match name {
                    "sum" => vals.sum(),
                    "max" => vals.fold(f32::MIN, f32::max),
                    "avg" => vals.sum::<f32>() / n as f32,
                    _ => 0.5 * vals.sum::<f32>(),
                }
            })
            .collect();
        close(&format!("all_reduce {name}"), &s.clone_dtoh(&d).map_err(e)?, &want)?;
    }

    let root = n - 1;
    let mut d = s.clone_htod(&mine(r)).map_err(e)?;
    dev.broadcast(&mut d, root).map_err(e)?.wait().map_err(e)?;
    close("broadcast", &s.clone_dtoh(&d).map_err(e)?, &mine(root))?;

    let mut d = s.clone_htod(&mine(r)).map_err(e)?;
    dev.reduce(&mut d, ReduceOp::Sum, 0).map_err(e)?.wait().map_err(e)?;
    if r == 0 {
        let want: Vec<f32> = (0..len).map(|i| (0..n).map(|q| mine(q)[i]).sum()).collect();
        close("reduce", &s.clone_dtoh(&d).map_err(e)?, &want)?;
    }

    let send = s.clone_htod(&mine(r)).map_err(e)?;
    let mut all = s.alloc_zeros::<f32>(n * len).map_err(e)?;
    dev.all_gather(&send, &mut all).map_err(e)?.wait().map_err(e)?;
    let want: Vec<f32> = (0..n).flat_map(mine).collect();
    close("all_gather", &s.clone_dtoh(&all).map_err(e)?, &want)?;

    let big: Vec<f32> = (0..n * len).map(|i| (r * 7 + i) as f32).collect();
    let send = s.clone_htod(&big).map_err(e)?;
    let mut part = s.alloc_zeros::<f32>(len).map_err(e)?;
    dev.reduce_scatter(&send, &mut part, ReduceOp::Sum).map_err(e)?.wait().map_err(e)?;
    let want: Vec<f32> = (0..len).map(|i| (0..n).map(|q| (q * 7 + r * len + i) as f32).sum()).collect();
    close("reduce_scatter", &s.clone_dtoh(&part).map_err(e)?, &want)?;

    let k = 5;
    let send = s.clone_htod(&(0..n * k).map(|i| (r * 100 + i) as f32).collect::<Vec<_>>()).map_err(e)?;
    let mut recv = s.alloc_zeros::<f32>(n * k).map_err(e)?;
    dev.all_to_all(&send, &mut recv).map_err(e)?.wait().map_err(e)?;
    let want: Vec<f32> = (0..n).flat_map(|q| (0..k).map(move |x| (q * 100 + r * k + x) as f32)).collect();
    close("all_to_all", &s.clone_dtoh(&recv).map_err(e)?, &want)?;

    // A ring shift in one NCCL group, completed on a second stream.
    let out = s.clone_htod(&mine(r)).map_err(e)?;
    let mut inn = s.alloc_zeros::<f32>(len).map_err(e)?;
    let req = dev
        .batch(|b| {
            b.send((r + 1) % n, RING, &out);
            b.recv((r + n - 1) % n, RING, &mut inn);
        })
        .map_err(e)?;
    let other = s.context().new_stream().map_err(e)?;
    req.stream_wait(&other).map_err(e)?;
    other.synchronize().map_err(e)?;
    close("batch ring", &s.clone_dtoh(&inn).map_err(e)?, &mine((r + n - 1) % n))?;

    // A split: collectives among ranks of the same parity.
    let par = world.split::<Parity>((r % 2) as u32, r as i64).map_err(e)?;
    let pd = par.device().map_err(e)?;
    let mut x = pd.stream().clone_htod(&[r as f32]).map_err(e)?;
    pd.all_reduce(&mut x, ReduceOp::Sum).map_err(e)?.wait().map_err(e)?;
    let want: f32 = (0..n).filter(|q| q % 2 == r % 2).map(|q| q as f32).sum();
    close("split all_reduce", &pd.stream().clone_dtoh(&x).map_err(e)?, &[want])?;

    dev.barrier().map_err(e)?;
    if r == 0 {
        println!("nccl: every device op correct on {n} GPU(s)");
    }
    Ok(())
}

#[test]
#[ignore = "needs a GPU, the CUDA driver and libnccl: run scripts/gpu-check.sh"]
fn nccl_device_ops_match_the_serial_reference() {
    let gpus = dist_runtime::nccl::probe().expect("this test needs a GPU");
    for n in [1, 2, 4, 8].into_iter().filter(|&n| n <= gpus) {
        let r = Launch::entry("nccl::device_ops", n)
            .unwrap()
            .env("DIST_BACKEND", "nccl")
            .capture(true)
            .timeout(Duration::from_secs(300))
            .run()
            .unwrap();
        assert!(r.success(), "{n} GPU(s):\n{}", r.summary());
        println!("{}", r.ranks[0].output);
    }
}

/// A device collective whose ranks disagree is `Error::Mismatch` naming both calls
/// (compared through the host backend before anything is enqueued), as on the host.
#[spmd(unchecked)]
fn device_mismatch(world: Comm<World>) -> Result<(), String> {
    let dev = world.device().map_err(e)?;
    let len = if world.rank() == 0 { 8 } else { 9 };
    let mut d = dev.stream().alloc_zeros::<f32>(len).map_err(e)?;
    match dev.all_reduce(&mut d, ReduceOp::Sum) {
        Err(err @ dist_runtime::Error::Mismatch { .. }) => {
            let msg = err.to_string();
            if !(msg.contains("f32 × 8") && msg.contains("f32 × 9") && msg.contains("nccl.rs:")) {
                return Err(format!("the mismatch names neither both calls nor the site: {msg}"));
            }
            Ok(())
        }
        Err(other) => Err(format!("expected a mismatch, got {other}")),
        Ok(_) => Err("a mismatched device all_reduce was enqueued".into()),
    }
}

/// A device wait whose peer never makes the matching call ends at `DIST_TIMEOUT` with
/// `Error::Timeout` naming the op and its line, instead of hanging the job.
#[spmd(unchecked)]
fn device_wait_deadline(world: Comm<World>) -> Result<(), String> {
    let dev = world.device().map_err(e)?;
    if world.rank() == 1 {
        // Never joins the collective; stays alive past the peer's deadline.
        std::thread::sleep(Duration::from_secs(6));
        return Ok(());
    }
    let mut d = dev.stream().alloc_zeros::<f32>(4).map_err(e)?;
    // The agreement exchange would catch the absent peer first on the host side; turn
    // it off here (DIST_DEBUG=off) to test the device wait itself.
    match dev.all_reduce(&mut d, ReduceOp::Sum).map_err(e)?.wait() {
        Err(err @ dist_runtime::Error::Timeout { .. }) if err.to_string().contains("all_reduce") => Ok(()),
        Err(other) => Err(format!("expected a timeout naming all_reduce, got {other}")),
        Ok(()) => Err("a device all_reduce without its peer completed".into()),
    }
}

#[test]
#[ignore = "needs two GPUs, the CUDA driver and libnccl: run scripts/gpu-check.sh"]
fn nccl_mismatch_and_deadline_report_like_host_ops() {
    let gpus = dist_runtime::nccl::probe().expect("this test needs a GPU");
    if gpus < 2 {
        println!("nccl: one GPU: the mismatch and deadline tests need two ranks on two GPUs; skipped");
        return;
    }
    let r = Launch::entry("nccl::device_mismatch", 2)
        .unwrap()
        .env("DIST_BACKEND", "nccl")
        .env("DIST_DEBUG", "check")
        .capture(true)
        .timeout(Duration::from_secs(120))
        .run()
        .unwrap();
    assert!(r.success(), "mismatch:\n{}", r.summary());
    let r = Launch::entry("nccl::device_wait_deadline", 2)
        .unwrap()
        .env("DIST_BACKEND", "nccl")
        .env("DIST_DEBUG", "off")
        .env("DIST_TIMEOUT", "2")
        .capture(true)
        .timeout(Duration::from_secs(120))
        .run()
        .unwrap();
    assert!(r.success(), "deadline:\n{}", r.summary());
}
