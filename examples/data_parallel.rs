//! Data parallelism: a 2-layer MLP trained by SGD on a synthetic regression set whose
//! rows are sharded across ranks. Each rank back-propagates its shard; the gradients are
//! summed with all_reduce in two buckets, each launched (non-blocking) as soon as the
//! backward pass has produced it, so the output layer's reduction overlaps the hidden
//! layer's backward pass, as DDP's buckets do. After K steps every rank checks its weights against serial
//! training on the whole batch (within 1e-5 relative) and rank 0 prints the loss curve.
//!
//! `cargo xtask run -n 4 --example data_parallel`

mod support;

use dist_runtime::prelude::*;
use support::{check_close, matmul, matmul_tn, shard, Rng};

const N: usize = 96; // rows in the global batch
const D: usize = 4; // inputs
const H: usize = 16; // hidden units
const STEPS: usize = 40;
const LR: f64 = 0.05;

/// Parameters, flattened in two buckets: [w2 (H), b2 (1)] and [w1 (D×H), b1 (H)].
#[derive(Clone)]
struct Params {
    out: Vec<f64>,
    hidden: Vec<f64>,
}

fn init() -> Params {
    let mut g = Rng::new(7);
    Params { out: g.vec(H + 1, 0.5), hidden: g.vec(D * H + H, 0.5) }
}

fn data() -> (Vec<f64>, Vec<f64>) {
    let mut g = Rng::new(11);
    let x = g.vec(N * D, 1.0);
    let y = (0..N).map(|i| (x[i * D]).sin() + 0.5 * x[i * D + 1] * x[i * D + 2] - x[i * D + 3]).collect();
    (x, y)
}

/// What the backward pass of the hidden layer needs from the forward pass.
struct Saved {
    hid: Vec<f64>,
    dy: Vec<f64>,
}

/// Forward over `rows` rows and the output layer's backward: the sum of squared errors
/// and the output bucket's gradient sums [dL/dw2 = hidᵀ·dy, dL/db2 = Σ dy].
fn backward_out(p: &Params, x: &[f64], y: &[f64], rows: usize) -> (f64, Vec<f64>, Saved) {
    let (w1, b1) = p.hidden.split_at(D * H);
    let (w2, b2) = p.out.split_at(H);
    let mut hid = matmul(x, w1, rows, D, H);
    for i in 0..rows {
        for j in 0..H {
            hid[i * H + j] = (hid[i * H + j] + b1[j]).tanh();
        }
    }
    let pred = matmul(&hid, w2, rows, H, 1);
    let dy: Vec<f64> = (0..rows).map(|i| 2.0 * (pred[i] + b2[0] - y[i])).collect();
    let sse: f64 = dy.iter().map(|d| d * d / 4.0).sum();
    let mut g_out = matmul_tn(&hid, &dy, rows, H, 1);
    g_out.push(dy.iter().sum());
    (sse, g_out, Saved { hid, dy })
}

/// The hidden layer's backward: dZ = (dy·w2ᵀ) ⊙ (1 − hid²); [dL/dw1 = xᵀ·dZ, dL/db1 = Σ dZ].
fn backward_hidden(p: &Params, x: &[f64], s: &Saved, rows: usize) -> Vec<f64> {
    let w2 = &p.out[..H];
    let mut dz = vec![0.0; rows * H];
    for i in 0..rows {
        for j in 0..H {
            dz[i * H + j] = s.dy[i] * w2[j] * (1.0 - s.hid[i * H + j] * s.hid[i * H + j]);
        }
    }
    let mut g_hidden = matmul_tn(x, &dz, rows, D, H);
    g_hidden.extend((0..H).map(|j| (0..rows).map(|i| dz[i * H + j]).sum::<f64>()));
    g_hidden
}

fn sgd(p: &mut Params, g_out: &[f64], g_hidden: &[f64]) {
    for (w, g) in p.out.iter_mut().zip(g_out) {
        *w -= LR * g / N as f64;
    }
    for (w, g) in p.hidden.iter_mut().zip(g_hidden) {
        *w -= LR * g / N as f64;
    }
}

/// The reference: the same training on the whole batch in one process.
fn serial() -> (Params, Vec<f64>) {
    let (x, y) = data();
    let mut p = init();
    let mut losses = Vec::new();
    for _ in 0..STEPS {
        let (sse, g_out, saved) = backward_out(&p, &x, &y, N);
        let g_hidden = backward_hidden(&p, &x, &saved, N);
        losses.push(sse / N as f64);
        sgd(&mut p, &g_out, &g_hidden);
    }
    (p, losses)
}

#[spmd(strict)]
fn main(world: Comm<World>) -> Result<(), String> {
    let (r, n) = (world.rank(), world.size());
    let (x, y) = data();
    let (lo, hi) = shard(N, n, r);
    let (xs, ys) = (&x[lo * D..hi * D], &y[lo..hi]);
    let mut p = init();
    let mut losses = Vec::new();
    let rows = hi - lo;
    let err = |e: dist_runtime::Error| e.to_string();
    for _ in 0..STEPS {
        let (sse, mut g_out, saved) = backward_out(&p, xs, ys, rows);
        // The output bucket is summed across ranks while the hidden layer back-propagates.
        let out_req = world.all_reduce_async(&mut g_out, ReduceOp::Sum).map_err(err)?;
        let mut g_hidden = backward_hidden(&p, xs, &saved, rows);
        let hidden_req = world.all_reduce_async(&mut g_hidden, ReduceOp::Sum).map_err(err)?;
        out_req.wait().map_err(err)?;
        hidden_req.wait().map_err(err)?;
        let mut loss = [sse];
        world.all_reduce(&mut loss, ReduceOp::Sum).map_err(err)?;
        losses.push(loss[0] / N as f64);
        sgd(&mut p, &g_out, &g_hidden);
    }
    let (want, want_losses) = serial();
    let d1 = check_close("output-layer weights", &p.out, &want.out, 1e-5)?;
    let d2 = check_close("hidden-layer weights", &p.hidden, &want.hidden, 1e-5)?;
    check_close("loss curve", &losses, &want_losses, 1e-5)?;
    if r == 0 {
        println!("data parallel over {n} ranks, {N} rows ({} per rank), {STEPS} steps", N / n);
        for (s, l) in losses.iter().enumerate().filter(|(s, _)| s % 5 == 0 || *s == STEPS - 1) {
            println!("  step {s:>3}  loss {l:.6}");
        }
        println!("weights match serial training: max relative difference {:.2e}", d1.max(d2));
    }
    Ok(())
}
