//! Fully sharded data parallelism (FSDP / ZeRO-3) with communication overlapped with
//! compute: a 4-layer tanh MLP whose every weight matrix is a flat vector sharded
//! unevenly across the ranks (`counts`, as FSDP's flat parameters; 50×50 = 2500 does not
//! divide by 3 or 8), trained by SGD on a batch whose rows are sharded too.
//!
//! - Forward: layer l+1's weights are gathered (`all_gather_v_async`) while layer l
//!   computes — the parameter prefetch; a layer's full weights are dropped after use.
//! - Backward: the weights are gathered again, one layer ahead, and each layer's weight
//!   gradient is reduced to its owners (`reduce_scatter_v_async`) while the layer below
//!   computes — the bucketed gradient reduction; each rank updates only its shard.
//!
//! The same training runs twice, overlapped and with blocking calls, and each is checked
//! against serial training on the whole batch (within 1e-9 relative); rank 0 prints
//! each step time split into compute and the communication left exposed.
//!
//! What it shows on a CPU: on shared memory the communication is itself CPU work (the
//! copies and reductions), so it overlaps with compute only where the ranks leave cores
//! idle. On the 2-core machine of docs/performance.md, three runs of `cargo xtask run
//! --release -n 2 --example fsdp` measured 2.16–2.22 ms per step blocking (0.06–0.09 ms
//! of it communication) and 2.29–2.33 ms overlapped (0.15–0.18 ms not hidden): with
//! nothing idle to hide it on, the worker thread that runs the non-blocking collectives
//! adds its hand-off (~8 µs per op, 12 ops per step). The pattern pays where a collective
//! runs on an engine of its own (NCCL on a GPU's copy engines and NICs, as FSDP uses
//! it) or on spare cores.
//!
//! `cargo xtask run -n 4 --example fsdp`

mod support;

use dist_runtime::prelude::*;
use std::time::Instant;
use support::{check_close, matmul, matmul_nt, matmul_tn, shard, Rng};

const W: usize = 50; // width of every layer
const L: usize = 4; // layers
const ROWS: usize = 256; // rows in the global batch
const STEPS: usize = 6;
const LR: f64 = 0.2;

fn err(e: dist_runtime::Error) -> String {
    e.to_string()
}

fn init() -> Vec<Vec<f64>> {
    let mut g = Rng::new(5);
    (0..L).map(|_| g.vec(W * W, 1.6 / (W as f64).sqrt())).collect()
}

fn batch() -> (Vec<f64>, Vec<f64>) {
    let mut g = Rng::new(9);
    let x = g.vec(ROWS * W, 1.0);
    let y = (0..ROWS).map(|i| (x[i * W] * 2.0).sin() + x[i * W + 1] * x[i * W + 2]).collect();
    (x, y)
}

/// One layer forward: `tanh(h · w)` for `rows` rows.
fn layer(h: &[f64], w: &[f64], rows: usize) -> Vec<f64> {
    matmul(h, w, rows, W, W).into_iter().map(f64::tanh).collect()
}

/// The loss's gradient with respect to the last activations (the prediction is the
/// mean of the last layer's units), summed over `rows` rows and scaled by 1/ROWS.
fn head_grad(h: &[f64], y: &[f64], rows: usize) -> (f64, Vec<f64>) {
    let mut dh = vec![0.0; rows * W];
    let mut loss = 0.0;
    for i in 0..rows {
        let pred = h[i * W..(i + 1) * W].iter().sum::<f64>() / W as f64;
        loss += (pred - y[i]) * (pred - y[i]) / ROWS as f64;
        let d = 2.0 * (pred - y[i]) / ROWS as f64 / W as f64;
        dh[i * W..(i + 1) * W].iter_mut().for_each(|v| *v = d);
    }
    (loss, dh)
}

/// Backward through one layer: from the gradient of its output `out` (tanh of `inp·w`)
/// to its weight gradient and the gradient of its input.
fn layer_back(inp: &[f64], out: &[f64], w: &[f64], dout: &[f64], rows: usize) -> (Vec<f64>, Vec<f64>) {
    let dz: Vec<f64> = dout.iter().zip(out).map(|(d, o)| d * (1.0 - o * o)).collect();
    (matmul_tn(inp, &dz, rows, W, W), matmul_nt(&dz, w, rows, W, W))
}

/// Serial training on the whole batch: the reference.
fn serial() -> (Vec<Vec<f64>>, Vec<f64>) {
    let mut ws = init();
    let (x, y) = batch();
    let mut losses = Vec::new();
    for _ in 0..STEPS {
        let mut acts = vec![x.clone()];
        for w in &ws {
            let h = layer(acts.last().expect("input"), w, ROWS);
            acts.push(h);
        }
        let (loss, mut dh) = head_grad(&acts[L], &y, ROWS);
        losses.push(loss);
        for l in (0..L).rev() {
            let (dw, dx) = layer_back(&acts[l], &acts[l + 1], &ws[l], &dh, ROWS);
            ws[l].iter_mut().zip(&dw).for_each(|(w, g)| *w -= LR * g);
            dh = dx;
        }
    }
    (ws, losses)
}

/// One rank's FSDP training: returns its weight shards and the loss curve. `overlap`
/// chooses the non-blocking collectives (waited one layer later) or the blocking ones.
/// What a run measured: seconds per step, and of it, seconds of compute (the rest is
/// communication that was not hidden behind compute).
struct Timing {
    step: f64,
    compute: f64,
}

fn train(world: &Comm<World>, overlap: bool) -> dist_runtime::Result<(Vec<Vec<f64>>, Vec<f64>, Timing)> {
    let (n, me) = (world.size(), world.rank());
    let counts: Vec<usize> = (0..n).map(|j| shard(W * W, n, j).1 - shard(W * W, n, j).0).collect();
    let (p0, p1) = shard(W * W, n, me);
    let mut shards: Vec<Vec<f64>> = init().into_iter().map(|w| w[p0..p1].to_vec()).collect();
    let (x, y) = batch();
    let (r0, r1) = shard(ROWS, n, me);
    let rows = r1 - r0;
    let (x, y) = (x[r0 * W..r1 * W].to_vec(), &y[r0..r1]);
    let mut losses = Vec::new();
    let mut compute = 0.0;
    let mut timed = |f: &mut dyn FnMut()| {
        let t = Instant::now();
        f();
        compute += t.elapsed().as_secs_f64();
    };
    world.barrier()?;
    let t0 = Instant::now();
    for _ in 0..STEPS {
        // Forward, prefetching the next layer's weights.
        let mut acts = vec![x.clone()];
        let mut cur = vec![0.0; W * W];
        world.all_gather_v(&shards[0], &mut cur, &counts)?;
        for l in 0..L {
            let mut next = vec![0.0; if l + 1 < L { W * W } else { 0 }];
            let h = if overlap && l + 1 < L {
                let req = world.all_gather_v_async(&shards[l + 1], &mut next, &counts)?;
                let mut h = Vec::new();
                timed(&mut || h = layer(&acts[l], &cur, rows));
                req.wait()?;
                h
            } else {
                let mut h = Vec::new();
                timed(&mut || h = layer(&acts[l], &cur, rows));
                if l + 1 < L {
                    world.all_gather_v(&shards[l + 1], &mut next, &counts)?;
                }
                h
            };
            acts.push(h);
            cur = next; // layer l's full weights are dropped here
        }
        let (loss, mut dh) = head_grad(&acts[L], y, rows);
        let mut total = [loss];
        world.all_reduce(&mut total, ReduceOp::Sum)?;
        losses.push(total[0]);
        // Backward: gather layer l-1 while layer l computes; reduce layer l's gradient
        // to its owners while layer l-1 computes.
        let mut cur = vec![0.0; W * W];
        world.all_gather_v(&shards[L - 1], &mut cur, &counts)?;
        let mut gshards: Vec<Vec<f64>> = (0..L).map(|_| vec![0.0; p1 - p0]).collect();
        let mut pending_grad: Option<(usize, Vec<f64>)> = None;
        for l in (0..L).rev() {
            let mut prev = vec![0.0; if l > 0 { W * W } else { 0 }];
            let fetch = if overlap && l > 0 {
                Some(world.all_gather_v_async(&shards[l - 1], &mut prev, &counts)?)
            } else {
                None
            };
            // The gradient of the layer above, reduced while this layer computes.
            let (gl, gbuf) = pending_grad.take().unwrap_or((L, Vec::new()));
            let reduce = match gshards.get_mut(gl) {
                Some(out) if overlap => Some(world.reduce_scatter_v_async(&gbuf, out, &counts, ReduceOp::Sum)?),
                Some(out) => {
                    world.reduce_scatter_v(&gbuf, out, &counts, ReduceOp::Sum)?;
                    None
                }
                None => None,
            };
            let (mut dw, mut dx) = (Vec::new(), Vec::new());
            timed(&mut || (dw, dx) = layer_back(&acts[l], &acts[l + 1], &cur, &dh, rows));
            if let Some(r) = reduce {
                r.wait()?;
            }
            // (`map` consumes the request, so its borrow of `prev` ends here.)
            let fetched = fetch.map(|f| f.wait()).transpose()?.is_some();
            if !fetched && l > 0 {
                world.all_gather_v(&shards[l - 1], &mut prev, &counts)?;
            }
            pending_grad = Some((l, dw));
            dh = dx;
            cur = prev;
        }
        let (gl, gbuf) = pending_grad.take().expect("layer 0's gradient");
        world.reduce_scatter_v(&gbuf, &mut gshards[gl], &counts, ReduceOp::Sum)?;
        for (s, g) in shards.iter_mut().zip(&gshards) {
            s.iter_mut().zip(g).for_each(|(w, g)| *w -= LR * g);
        }
    }
    let step = t0.elapsed().as_secs_f64() / STEPS as f64;
    Ok((shards, losses, Timing { step, compute: compute / STEPS as f64 }))
}

#[spmd(strict)]
fn main(world: Comm<World>) -> Result<(), String> {
    let n = world.size();
    let (want, want_losses) = serial();
    let counts: Vec<usize> = (0..n).map(|j| shard(W * W, n, j).1 - shard(W * W, n, j).0).collect();
    let mut times = Vec::new();
    for overlap in [true, false] {
        let (shards, losses, timing) = train(&world, overlap).map_err(err)?;
        let what = if overlap { "overlapped" } else { "blocking" };
        for (l, s) in shards.iter().enumerate() {
            let mut full = vec![0.0; W * W];
            world.all_gather_v(s, &mut full, &counts).map_err(err)?;
            check_close(&format!("{what}: layer {l} weights after {STEPS} steps"), &full, &want[l], 1e-9)?;
        }
        check_close(&format!("{what}: loss curve"), &losses, &want_losses, 1e-9)?;
        // The slowest rank's step and compute times.
        let mut t = [timing.step, timing.compute];
        world.all_reduce(&mut t, ReduceOp::Max).map_err(err)?;
        times.push(t);
    }
    if world.rank() == 0 {
        let shards: Vec<String> = counts.iter().map(|c| c.to_string()).collect();
        println!("{L} layers of {W}×{W} sharded over {n} ranks as [{}] weights each", shards.join(", "));
        println!(
            "loss: {:.5} → {:.5} (serial {:.5} → {:.5})",
            want_losses[0],
            want_losses[STEPS - 1],
            want_losses[0],
            want_losses[STEPS - 1]
        );
        println!("weights and losses match serial training within 1e-9, overlapped and blocking");
        for (what, [step, compute]) in ["overlapped", "blocking"].iter().zip(&times) {
            println!(
                "{what:>10}: {:.2} ms per step = compute {:.2} ms + communication not hidden {:.2} ms",
                step * 1e3,
                compute * 1e3,
                (step - compute).max(0.0) * 1e3
            );
        }
        println!("overlapped ÷ blocking step time: {:.2}", times[0][0] / times[1][0]);
    }
    Ok(())
}
