//! One suite for device buffers, run on whichever device a job has: the simulated device
//! on every machine (`tests/device.rs`, in CI), NCCL on GPUs (`tests/nccl.rs`,
//! `scripts/gpu-check.sh`). Every op goes through the same `Comm` methods as host
//! buffers, and is checked against a serial reference computed here. Values are small
//! integers in f32, so every reduction is exact on every backend.

use dist_runtime::prelude::*;
use dist_runtime::{Buf, BufMut, Error};
use std::time::Duration;

/// How a test moves data to and from one kind of device memory.
pub trait Mem {
    /// The device buffer of f32 (its optional other side, as in `gather`, is the same type).
    type D: BufMut<f32> + Buf<f32, Like = Self::D>;
    fn up(&self, v: &[f32]) -> Result<Self::D, String>;
    fn down(&self, d: &Self::D) -> Result<Vec<f32>, String>;
    fn zeros(&self, n: usize) -> Result<Self::D, String> {
        self.up(&vec![0.0; n])
    }
}

fn e(x: impl std::fmt::Display) -> String {
    x.to_string()
}

fn same(what: &str, got: &[f32], want: &[f32]) -> Result<(), String> {
    if got != want {
        let at = got.iter().zip(want).position(|(g, w)| g != w).unwrap_or(got.len().min(want.len()));
        return Err(format!(
            "{what}: {} elements, expected {}; first difference at {at}: {:?} vs {:?}",
            got.len(),
            want.len(),
            got.get(at),
            want.get(at)
        ));
    }
    Ok(())
}

dist_runtime::group!(DevParity);
dist_runtime::group!(DevRow);
dist_runtime::group!(DevCol);
const T: Tag<f32> = Tag::new(5);

/// Every op of `Comm` on device buffers, against serial references; lengths include 0
/// and lengths that are not multiples of the world size.
pub fn device_ops<M: Mem>(world: &Comm<World>, m: &M) -> Result<(), String> {
    let (r, n) = (world.rank(), world.size());
    let mine = |q: usize, len: usize| -> Vec<f32> { (0..len).map(|i| ((q * 31 + i * 7) % 97) as f32).collect() };
    for len in [0, 1, 7, 1003] {
        for (op, name) in [
            (ReduceOp::Sum, "sum"),
            (ReduceOp::Max, "max"),
            (ReduceOp::Min, "min"),
            (ReduceOp::Avg, "avg"),
            (ReduceOp::PreMulSum(0.5), "premulsum"),
        ] {
            let mut d = m.up(&mine(r, len))?;
            world.all_reduce(&mut d, op).map_err(e)?;
            let want: Vec<f32> = (0..len)
                .map(|i| {
                    let vals: Vec<f32> = (0..n).map(|q| mine(q, len)[i]).collect();
                    match name {
                        "sum" => vals.iter().sum(),
                        "max" => vals.iter().cloned().fold(f32::MIN, f32::max),
                        "min" => vals.iter().cloned().fold(f32::MAX, f32::min),
                        "avg" => vals.iter().sum::<f32>() / n as f32,
                        _ => vals.iter().map(|v| 0.5 * v).sum(),
                    }
                })
                .collect();
            if name == "avg" {
                // Sum then divide, or divide then sum: equal within rounding.
                let got = m.down(&d)?;
                if got.iter().zip(&want).any(|(g, w)| (g - w).abs() > 1e-4 * w.abs().max(1.0)) || got.len() != len {
                    return Err(format!("all_reduce avg (len {len}): {got:?} vs {want:?}"));
                }
            } else {
                same(&format!("all_reduce {name} (len {len})"), &m.down(&d)?, &want)?;
            }
        }

        let root = n - 1;
        let mut d = m.up(&mine(r, len))?;
        world.broadcast(&mut d, root).map_err(e)?;
        same("broadcast", &m.down(&d)?, &mine(root, len))?;

        let mut d = m.up(&mine(r, len))?;
        world.reduce(&mut d, ReduceOp::Sum, 0).map_err(e)?;
        let want: Vec<f32> =
            if r == 0 { (0..len).map(|i| (0..n).map(|q| mine(q, len)[i]).sum()).collect() } else { mine(r, len) };
        same("reduce", &m.down(&d)?, &want)?;

        let send = m.up(&mine(r, len))?;
        let mut all = m.zeros(n * len)?;
        world.all_gather(&send, &mut all).map_err(e)?;
        let want: Vec<f32> = (0..n).flat_map(|q| mine(q, len)).collect();
        same("all_gather", &m.down(&all)?, &want)?;

        // gather to the last rank; None elsewhere.
        if r == root {
            let mut all = m.zeros(n * len)?;
            world.gather(&send, Some(&mut all), root).map_err(e)?;
            same("gather", &m.down(&all)?, &want)?;
        } else {
            world.gather(&send, None, root).map_err(e)?;
        }

        // scatter from rank 0.
        let mut part = m.zeros(len)?;
        let big: Vec<f32> = (0..n * len).map(|i| (i % 89) as f32).collect();
        if r == 0 {
            let src = m.up(&big)?;
            world.scatter(Some(&src), &mut part, 0).map_err(e)?;
        } else {
            world.scatter(None, &mut part, 0).map_err(e)?;
        }
        same("scatter", &m.down(&part)?, &big[r * len..(r + 1) * len])?;

        let big: Vec<f32> = (0..n * len).map(|i| ((r * 7 + i) % 61) as f32).collect();
        let send = m.up(&big)?;
        let mut part = m.zeros(len)?;
        world.reduce_scatter(&send, &mut part, ReduceOp::Sum).map_err(e)?;
        let want: Vec<f32> = (0..len).map(|i| (0..n).map(|q| ((q * 7 + r * len + i) % 61) as f32).sum()).collect();
        same("reduce_scatter", &m.down(&part)?, &want)?;

        let send = m.up(&(0..n * len).map(|i| (r * 100 + i % 50) as f32).collect::<Vec<_>>())?;
        let mut recv = m.zeros(n * len)?;
        world.all_to_all(&send, &mut recv).map_err(e)?;
        let want: Vec<f32> =
            (0..n).flat_map(|q| (0..len).map(move |x| (q * 100 + (r * len + x) % 50) as f32)).collect();
        same("all_to_all", &m.down(&recv)?, &want)?;
    }

    // The _v forms: rank j contributes j + 1 elements.
    let counts: Vec<usize> = (0..n).map(|j| j + 1).collect();
    let total: usize = counts.iter().sum();
    let send = m.up(&mine(r, r + 1))?;
    let want: Vec<f32> = (0..n).flat_map(|q| mine(q, q + 1)).collect();
    let mut all = m.zeros(total)?;
    world.all_gather_v(&send, &mut all, &counts).map_err(e)?;
    same("all_gather_v", &m.down(&all)?, &want)?;
    if r == 0 {
        let mut all = m.zeros(total)?;
        world.gather_v(&send, Some(&mut all), &counts, 0).map_err(e)?;
        same("gather_v", &m.down(&all)?, &want)?;
    } else {
        world.gather_v(&send, None, &counts, 0).map_err(e)?;
    }
    // all_to_all_v: rank i sends i + j copies of 10·i + j to rank j.
    let sc: Vec<usize> = (0..n).map(|j| r + j).collect();
    let rc: Vec<usize> = (0..n).map(|i| i + r).collect();
    let send = m.up(&(0..n).flat_map(|j| vec![(10 * r + j) as f32; r + j]).collect::<Vec<_>>())?;
    let mut recv = m.zeros(rc.iter().sum())?;
    world.all_to_all_v(&send, &sc, &mut recv, &rc).map_err(e)?;
    let want: Vec<f32> = (0..n).flat_map(|i| vec![(10 * i + r) as f32; i + r]).collect();
    same("all_to_all_v", &m.down(&recv)?, &want)?;

    // The _v forms with counts of one size (3 each), which NCCL 2.28+ carries with its own
    // gather and scatter, and an all_to_all_v of one size, which stays grouped sends and
    // receives (its counts could differ by rank): each against the serial reference.
    let even = vec![3usize; n];
    let send = m.up(&mine(r, 3))?;
    let want: Vec<f32> = (0..n).flat_map(|q| mine(q, 3)).collect();
    if r == n - 1 {
        let mut all = m.zeros(3 * n)?;
        world.gather_v(&send, Some(&mut all), &even, n - 1).map_err(e)?;
        same("gather_v of one size", &m.down(&all)?, &want)?;
        let src = m.up(&want)?;
        let mut part = m.zeros(3)?;
        world.scatter_v(Some(&src), &mut part, &even, n - 1).map_err(e)?;
        same("scatter_v of one size", &m.down(&part)?, &mine(r, 3))?;
    } else {
        world.gather_v(&send, None, &even, n - 1).map_err(e)?;
        let mut part = m.zeros(3)?;
        world.scatter_v(None, &mut part, &even, n - 1).map_err(e)?;
        same("scatter_v of one size", &m.down(&part)?, &mine(r, 3))?;
    }
    let send = m.up(&(0..n).flat_map(|j| vec![(10 * r + j) as f32; 2]).collect::<Vec<_>>())?;
    let mut recv = m.zeros(2 * n)?;
    world.all_to_all_v(&send, &vec![2; n], &mut recv, &vec![2; n]).map_err(e)?;
    let want: Vec<f32> = (0..n).flat_map(|i| vec![(10 * i + r) as f32; 2]).collect();
    same("all_to_all_v of one size", &m.down(&recv)?, &want)?;

    // scatter_v and reduce_scatter_v with uneven counts (j + 1 for rank j).
    let table: Vec<f32> = (0..total).map(|i| (i % 83) as f32).collect();
    let first: usize = counts[..r].iter().sum();
    let mut part = m.zeros(r + 1)?;
    if r == 0 {
        let src = m.up(&table)?;
        world.scatter_v(Some(&src), &mut part, &counts, 0).map_err(e)?;
    } else {
        world.scatter_v(None, &mut part, &counts, 0).map_err(e)?;
    }
    same("scatter_v", &m.down(&part)?, &table[first..first + r + 1])?;
    let grads = |q: usize| -> Vec<f32> { (0..total).map(|i| ((q * 5 + i) % 41) as f32).collect() };
    let send = m.up(&grads(r))?;
    let mut part = m.zeros(r + 1)?;
    world.reduce_scatter_v(&send, &mut part, &counts, ReduceOp::Sum).map_err(e)?;
    let want: Vec<f32> = (first..first + r + 1).map(|i| (0..n).map(|q| grads(q)[i]).sum()).collect();
    same("reduce_scatter_v", &m.down(&part)?, &want)?;
    // Prefix reductions have no device form: a clear error, before anything moves.
    let mut d = m.up(&mine(r, 4))?;
    let msg = world.scan(&mut d, ReduceOp::Sum).map(|_| ()).unwrap_err().to_string();
    if !msg.contains("no prefix reduction") {
        return Err(format!("scan on a device buffer: {msg}"));
    }

    // Non-blocking forms of the other collectives, all in flight before the waits.
    {
        let mut red = m.up(&mine(r, 6))?;
        let gsend = m.up(&mine(r, 2))?;
        let mut gall = m.zeros(2 * n)?;
        let a2a_in = m.up(&(0..n).map(|j| (10 * r + j) as f32).collect::<Vec<_>>())?;
        let mut a2a = m.zeros(n)?;
        let mut sv = m.zeros(r + 1)?;
        let svsrc = m.up(&table)?;
        let mut rsv = m.zeros(r + 1)?;
        let root = n - 1;
        let reqs = vec![
            world.reduce_async(&mut red, ReduceOp::Max, root).map_err(e)?,
            world.gather_async(&gsend, if r == root { Some(&mut gall) } else { None }, root).map_err(e)?,
            world.all_to_all_async(&a2a_in, &mut a2a).map_err(e)?,
            world.scatter_v_async(if r == 0 { Some(&svsrc) } else { None }, &mut sv, &counts, 0).map_err(e)?,
            world.reduce_scatter_v_async(&send, &mut rsv, &counts, ReduceOp::Sum).map_err(e)?,
            world.barrier_async().map_err(e)?,
        ];
        dist_runtime::wait_all(reqs).map_err(e)?;
        if r == root {
            let want: Vec<f32> = (0..6).map(|i| (0..n).map(|q| mine(q, 6)[i]).fold(f32::MIN, f32::max)).collect();
            same("reduce_async", &m.down(&red)?, &want)?;
            same("gather_async", &m.down(&gall)?, &(0..n).flat_map(|q| mine(q, 2)).collect::<Vec<_>>())?;
        }
        same("all_to_all_async", &m.down(&a2a)?, &(0..n).map(|i| (10 * i + r) as f32).collect::<Vec<_>>())?;
        same("scatter_v_async", &m.down(&sv)?, &table[first..first + r + 1])?;
        same("reduce_scatter_v_async", &m.down(&rsv)?, &want)?;
    }

    // Non-blocking forms, completed by wait.
    let mut a = m.up(&mine(r, 5))?;
    let mut b = m.up(&mine(r, 3))?;
    let ra = world.all_reduce_async(&mut a, ReduceOp::Sum).map_err(e)?;
    let rb = world.broadcast_async(&mut b, 0).map_err(e)?;
    ra.wait().map_err(e)?;
    rb.wait().map_err(e)?;
    same("all_reduce_async", &m.down(&a)?, &(0..5).map(|i| (0..n).map(|q| mine(q, 5)[i]).sum()).collect::<Vec<_>>())?;
    same("broadcast_async", &m.down(&b)?, &mine(0, 3))?;

    // Point-to-point: a ring, blocking, non-blocking, batched and sendrecv.
    let (next, prev) = ((r + 1) % n, (r + n - 1) % n);
    let out = m.up(&mine(r, 9))?;
    let mut inn = m.zeros(9)?;
    if n > 1 {
        if r % 2 == 0 {
            world.send(next, T, &out).map_err(e)?;
            world.recv(prev, T, &mut inn).map_err(e)?;
        } else {
            world.recv(prev, T, &mut inn).map_err(e)?;
            world.send(next, T, &out).map_err(e)?;
        }
        same("send/recv ring", &m.down(&inn)?, &mine(prev, 9))?;
    }
    // Device isend/irecv are enqueued in call order on the communicator's one stream,
    // as in NCCL: a receive enqueued ahead of the send its peer waits for would hang
    // (until the deadline), so the ring orders them by parity, as blocking calls must.
    if n > 1 {
        let mut inn = m.zeros(9)?;
        {
            let reqs = if r % 2 == 0 {
                let sq = world.isend(next, T, &out).map_err(e)?;
                [sq, world.irecv(prev, T, &mut inn).map_err(e)?]
            } else {
                let rq = world.irecv(prev, T, &mut inn).map_err(e)?;
                [rq, world.isend(next, T, &out).map_err(e)?]
            };
            dist_runtime::wait_all(reqs).map_err(e)?;
        }
        same("isend/irecv ring", &m.down(&inn)?, &mine(prev, 9))?;
    }
    let mut inn = m.zeros(9)?;
    world
        .batch(|b| {
            b.send(next, T, &out);
            b.recv(prev, T, &mut inn);
        })
        .map_err(e)?;
    same("batch ring", &m.down(&inn)?, &mine(prev, 9))?;
    let mut inn = m.zeros(9)?;
    world.sendrecv(next, T, &out, prev, &mut inn).map_err(e)?;
    same("sendrecv ring", &m.down(&inn)?, &mine(prev, 9))?;

    // Child communicators carry a device side: split, subgroup, mesh2.
    let par = world.split::<DevParity>((r % 2) as u32, r as i64).map_err(e)?;
    let mut x = m.up(&[r as f32])?;
    par.all_reduce(&mut x, ReduceOp::Sum).map_err(e)?;
    let want: f32 = (0..n).filter(|q| q % 2 == r % 2).map(|q| q as f32).sum();
    same("split all_reduce", &m.down(&x)?, &[want])?;
    if n % 2 == 0 {
        let (col, row) = world.mesh2::<DevCol, DevRow>(n / 2, 2).map_err(e)?;
        let mut x = m.up(&[r as f32])?;
        row.all_reduce(&mut x, ReduceOp::Sum).map_err(e)?;
        same("mesh2 row all_reduce", &m.down(&x)?, &[(4 * (r / 2) + 1) as f32])?;
        let mut x = m.up(&[r as f32])?;
        col.all_reduce(&mut x, ReduceOp::Max).map_err(e)?;
        same("mesh2 column all_reduce", &m.down(&x)?, &[(n - 2 + r % 2) as f32])?;
    }

    // Host and device buffers in one op: a clear error, on every rank alike.
    let host = vec![0f32; n];
    let dev = m.up(&[1.0])?;
    match world.all_gather(&dev, &mut host.clone()) {
        Err(Error::InvalidArgument { msg, .. }) if msg.contains("different places") => {}
        other => return Err(format!("mixed host/device all_gather: expected InvalidArgument, got {other:?}")),
    }
    let _ = host;
    world.barrier().map_err(e)?;
    Ok(())
}

/// A device collective whose ranks disagree is `Error::Mismatch` naming both calls,
/// compared through the host backend before anything is enqueued, as on the host.
pub fn device_mismatch<M: Mem>(world: &Comm<World>, m: &M) -> Result<(), String> {
    let len = if world.rank() == 0 { 8 } else { 9 };
    let mut d = m.zeros(len)?;
    match world.all_reduce(&mut d, ReduceOp::Sum) {
        Err(err @ Error::Mismatch { .. }) => {
            let msg = err.to_string();
            if !(msg.contains("f32 × 8") && msg.contains("f32 × 9") && msg.contains("device_suite.rs:")) {
                return Err(format!("the mismatch names neither both calls nor the site: {msg}"));
            }
            Ok(())
        }
        Err(other) => Err(format!("expected a mismatch, got {other}")),
        Ok(()) => Err("a mismatched device all_reduce ran".into()),
    }
}

/// A device wait whose peer never makes the matching call ends at `DIST_TIMEOUT` with
/// `Error::Timeout` naming the op and its line, instead of hanging the job; the device
/// side is then aborted and refuses further ops. Run with `DIST_DEBUG=off` (the
/// agreement exchange would catch the absent peer first, on the host side) and a short
/// `DIST_TIMEOUT`.
pub fn device_deadline<M: Mem>(world: &Comm<World>, m: &M, peer_stays: Duration) -> Result<(), String> {
    if world.rank() == 1 {
        // Never joins the collective; stays alive past the peer's deadline.
        std::thread::sleep(peer_stays);
        return Ok(());
    }
    let mut d = m.zeros(4)?;
    let start = std::time::Instant::now();
    let line = line!() + 1;
    let got = world.all_reduce(&mut d, ReduceOp::Sum);
    timed_out_then_refused(world, (start, peer_stays), got, ("all_reduce", line, ""), &mut d)
}

/// The end of a deadline test on rank 0: `got` (the op `what` called at `line`) must be
/// `Error::Timeout` naming the op and its line (and saying `says`), returned before the
/// peer left (`start` + `peer_stays`: the deadline, not the peer's leaving, ended the
/// wait); then the communicator's device side is aborted and the next device op (a
/// broadcast of `d`) is refused at once.
fn timed_out_then_refused<D: BufMut<f32> + Buf<f32, Like = D>>(
    world: &Comm<World>,
    (start, peer_stays): (std::time::Instant, Duration),
    got: dist_runtime::Result<()>,
    (what, line, says): (&str, u32, &str),
    d: &mut D,
) -> Result<(), String> {
    if start.elapsed() >= peer_stays {
        return Err(format!("the {what} ended after {:?}, only once the peer had left: {got:?}", start.elapsed()));
    }
    match got {
        Err(err @ Error::Timeout { .. }) => {
            let msg = err.to_string();
            if !(msg.contains(what) && msg.contains(&format!("device_suite.rs:{line}"))) {
                return Err(format!("the timeout names neither the op nor its line {line}: {msg}"));
            }
            if !msg.contains(says) {
                return Err(format!("the timeout does not say {says:?}: {msg}"));
            }
        }
        Err(other) => return Err(format!("expected a timeout naming {what}, got {other}")),
        Ok(()) => return Err(format!("a device {what} without its peer completed")),
    }
    match world.broadcast(d, 0) {
        Err(err) if err.to_string().contains("timed out, so its device side was aborted") => Ok(()),
        other => Err(format!("after a device timeout, expected a refusal, got {other:?}")),
    }
}

/// A device send whose peer never makes the matching receive ends at `DIST_TIMEOUT` too.
/// NCCL connects two ranks only at the first send or receive between them, inside the
/// call that posts it: a peer that never comes must not hold that call past the deadline.
/// (4 MiB, so that a device that buffers small messages must wait here as well.) The
/// timeout's text must contain `says` (NCCL's names the communicator and the connection it
/// waited for; the simulated device's deadline may be its own wait's or, first, that of
/// the host send it runs on its worker).
pub fn device_p2p_deadline<M: Mem>(world: &Comm<World>, m: &M, peer_stays: Duration, says: &str) -> Result<(), String> {
    if world.rank() == 1 {
        // Never receives; stays alive past the peer's deadline.
        std::thread::sleep(peer_stays);
        return Ok(());
    }
    if world.rank() != 0 {
        return Ok(());
    }
    let mut d = m.up(&vec![1.0; 1 << 20])?;
    let start = std::time::Instant::now();
    let line = line!() + 1;
    let got = world.send(1, T, &d);
    timed_out_then_refused(world, (start, peer_stays), got, ("send", line, says), &mut d)
}
