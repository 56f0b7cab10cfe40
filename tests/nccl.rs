//! The NCCL backend on real GPUs: every device op against a serial reference computed
//! here. Needs a GPU, the driver and libnccl: run `scripts/gpu-check.sh` (the tests are
//! `#[ignore]`d, so `cargo test` on a machine without GPUs skips them). Ranks run on
//! distinct GPUs where there are enough; where there are fewer GPUs than ranks they share
//! them (`DIST_SHARE_GPU=1`: NCCL over loopback sockets, since NCCL refuses two ranks of
//! one host on one device), so 1, 2 and 4 ranks run on any machine with a GPU.
#![cfg(feature = "nccl")]
// Entries here exercise the run-time checks: what the compile-time check cannot follow
// in them is expected (its warnings are `deprecated` uses; docs/static-checks.md).
#![allow(deprecated)]

use dist_runtime::prelude::*;
use dist_runtime::Launch;
use dist_tests::device::{device_deadline, device_mismatch, device_ops as device_ops_on, device_p2p_deadline, Mem};
use std::time::Duration;

/// Device memory on this rank's GPU, on the communicator's stream.
struct Cuda(std::sync::Arc<dist_runtime::nccl::CudaStream>);

impl Mem for Cuda {
    type D = dist_runtime::nccl::CudaSlice<f32>;
    fn up(&self, v: &[f32]) -> Result<Self::D, String> {
        self.0.clone_htod(v).map_err(|e| e.to_string())
    }
    fn down(&self, d: &Self::D) -> Result<Vec<f32>, String> {
        self.0.clone_dtoh(d).map_err(|e| e.to_string())
    }
    fn zeros(&self, n: usize) -> Result<Self::D, String> {
        self.0.alloc_zeros::<f32>(n).map_err(|e| e.to_string())
    }
}

/// A launch of `entry` on `n` ranks with the NCCL backend, sharing the GPUs when there
/// are fewer than `n`.
fn nccl_launch(entry: &str, n: usize, gpus: usize) -> Launch {
    let l = Launch::entry(entry, n).unwrap().env("DIST_BACKEND", "nccl").capture(true);
    if gpus < n {
        l.env("DIST_SHARE_GPU", "1")
    } else {
        l
    }
}

fn cuda(world: &Comm<World>) -> Result<Cuda, String> {
    Ok(Cuda(world.stream().map_err(|e| e.to_string())?))
}

/// Every op of `Comm` on device buffers of this rank's GPU (the suite the simulated
/// device runs in CI), plus a request completed by a stream wait.
#[spmd]
fn device_ops(world: Comm<World>) -> Result<(), String> {
    let m = cuda(&world)?;
    device_ops_on(&world, &m)?;
    // Overlap: another stream waits on the GPU for a non-blocking all_reduce.
    let (r, n) = (world.rank(), world.size());
    let mut x = m.up(&[r as f32; 3])?;
    let req = world.all_reduce_async(&mut x, ReduceOp::Sum).map_err(|e| e.to_string())?;
    let other = m.0.context().new_stream().map_err(|e| e.to_string())?;
    req.stream_wait(&other).map_err(|e| e.to_string())?;
    other.synchronize().map_err(|e| e.to_string())?;
    let want = (n * (n - 1) / 2) as f32;
    if m.down(&x)? != [want; 3] {
        return Err(format!("all_reduce_async + stream_wait: {:?}, expected {want}", m.down(&x)?));
    }
    if r == 0 {
        println!("nccl: every device op correct on {n} rank(s)");
    }
    Ok(())
}

#[test]
#[ignore = "needs a GPU, the CUDA driver and libnccl: run scripts/gpu-check.sh"]
fn nccl_device_ops_match_the_serial_reference() {
    let gpus = dist_runtime::nccl::probe().expect("this test needs a GPU");
    println!("NCCL's own all_to_all, gather, scatter: {}", dist_runtime::nccl::has_native_collectives());
    // Both routes of gather, scatter and all-to-all: NCCL's own calls (where the library
    // has them), and grouped sends and receives.
    for native in ["1", "0"] {
        for n in [1, 2, 4, 8].into_iter().filter(|&n| n <= gpus.max(4)) {
            let r = nccl_launch("nccl::device_ops", n, gpus)
                .env("DIST_NCCL_NATIVE", native)
                .timeout(Duration::from_secs(300))
                .run()
                .unwrap();
            assert!(r.success(), "{n} rank(s) on {gpus} GPU(s), DIST_NCCL_NATIVE={native}:\n{}", r.summary());
            println!("DIST_NCCL_NATIVE={native}: {}", r.ranks[0].output);
        }
    }
}

/// Summands of very different magnitudes (so the order of a sum shows in its bits):
/// rank `r`'s `i`-th, the same in every run.
fn summand(r: usize, i: usize) -> f32 {
    let mut x = (r as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (i as u64).wrapping_mul(0xD1B5_4A32_D192_ED03);
    x ^= x >> 29;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 32;
    let mantissa = (x >> 40) as f32 / (1u64 << 24) as f32 - 0.5;
    mantissa * f32::powi(2.0, (x % 40) as i32 - 20)
}

/// A device all-reduce (sum, f32) of summands whose sum's bits depend on the order it is
/// folded in; prints a hash of the result's bits, for the test to compare across runs,
/// and at two ranks checks it equals the host backend's fold (x0 + x1: one order).
#[spmd]
fn device_sum_bits(world: Comm<World>) -> Result<(), String> {
    let m = cuda(&world)?;
    let (r, n) = (world.rank(), world.size());
    let len = 1 << 20;
    let mine: Vec<f32> = (0..len).map(|i| summand(r, i)).collect();
    let mut d = m.up(&mine)?;
    world.all_reduce(&mut d, ReduceOp::Sum).map_err(|e| e.to_string())?;
    let got = m.down(&d)?;
    let mut host = mine.clone();
    world.all_reduce(&mut host[..], ReduceOp::Sum).map_err(|e| e.to_string())?;
    let differ = got.iter().zip(&host).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
    if n == 2 && differ > 0 {
        return Err(format!("{differ} of {len} sums differ from the host backend's x0 + x1"));
    }
    let hash =
        got.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, v| (h ^ u64::from(v.to_bits())).wrapping_mul(0x100_0000_01b3));
    if r == 0 {
        println!("bits {hash:016x} ({differ} of {len} differ from the host's rank-order fold)");
    }
    Ok(())
}

#[test]
#[ignore = "needs a GPU, the CUDA driver and libnccl: run scripts/gpu-check.sh"]
fn deterministic_device_sums_are_the_same_bits_in_every_run() {
    let gpus = dist_runtime::nccl::probe().expect("this test needs a GPU");
    for n in [2, 4].into_iter().filter(|&n| n <= gpus.max(4)) {
        let bits: Vec<String> = (0..2)
            .map(|_| {
                let r = nccl_launch("nccl::device_sum_bits", n, gpus)
                    .env("DIST_DETERMINISTIC", "1")
                    .timeout(Duration::from_secs(120))
                    .run()
                    .unwrap();
                assert!(r.success(), "{n} ranks:\n{}", r.summary());
                let out = r.ranks[0].output.clone();
                println!("{n} ranks, DIST_DETERMINISTIC=1: {}", out.trim());
                out.lines().find(|l| l.starts_with("bits ")).expect("the hash line").to_string()
            })
            .collect();
        assert_eq!(bits[0], bits[1], "{n} ranks: two runs gave different bits");
    }
    // Every device op still runs with NCCL's algorithm pinned.
    let r = nccl_launch("nccl::device_ops", 2, gpus)
        .env("DIST_DETERMINISTIC", "1")
        .timeout(Duration::from_secs(300))
        .run()
        .unwrap();
    assert!(r.success(), "device ops with DIST_DETERMINISTIC=1:\n{}", r.summary());
}

/// A device collective whose ranks disagree is `Error::Mismatch` naming both calls.
#[spmd(unchecked)]
fn device_mismatch_entry(world: Comm<World>) -> Result<(), String> {
    device_mismatch(&world, &cuda(&world)?)
}

/// A device wait whose peer never makes the matching call ends at `DIST_TIMEOUT`.
#[spmd(unchecked)]
fn device_wait_deadline(world: Comm<World>) -> Result<(), String> {
    device_deadline(&world, &cuda(&world)?, Duration::from_secs(6))
}

/// A first device send to a peer that never receives ends at `DIST_TIMEOUT` (NCCL would
/// wait inside `ncclGroupEnd` for the connection on a blocking communicator).
#[spmd(unchecked)]
fn device_p2p_wait_deadline(world: Comm<World>) -> Result<(), String> {
    device_p2p_deadline(&world, &cuda(&world)?, Duration::from_secs(8), "on World: NCCL to connect send")
}

#[test]
#[ignore = "needs a GPU, the CUDA driver and libnccl: run scripts/gpu-check.sh"]
fn nccl_mismatch_and_deadline_report_like_host_ops() {
    let gpus = dist_runtime::nccl::probe().expect("this test needs a GPU");
    let r = nccl_launch("nccl::device_mismatch_entry", 2, gpus)
        .env("DIST_DEBUG", "check")
        .timeout(Duration::from_secs(120))
        .run()
        .unwrap();
    assert!(r.success(), "mismatch:\n{}", r.summary());
    // The peer never joins: the wait must end at DIST_TIMEOUT (2 s), not inside NCCL's
    // connection to a peer that never comes (see `NCCL_RUNTIME_CONNECT` in the backend and
    // the non-blocking communicators of `comm.rs`): a collective, then a first send.
    for entry in ["nccl::device_wait_deadline", "nccl::device_p2p_wait_deadline"] {
        let r = nccl_launch(entry, 2, gpus)
            .env("DIST_DEBUG", "off")
            .env("DIST_TIMEOUT", "2")
            .timeout(Duration::from_secs(120))
            .run()
            .unwrap();
        assert!(r.success(), "{entry}:\n{}", r.summary());
    }
}
