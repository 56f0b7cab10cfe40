//! Training with candle, data × tensor parallel: a two-layer MLP (`tanh`, Megatron's
//! column- then row-parallel linear layers from `dist_runtime::candle`) learns a
//! synthetic regression target by SGD. The global batch is split over the dp replicas,
//! each layer's weights over the tp ranks; candle's autograd computes every gradient
//! (`loss.backward()`: the f/g all-reduces run inside it) and one bucketed all-reduce
//! averages them over dp. No matmul or backward is written by hand.
//!
//! Every rank also trains the same model in one process on the whole batch, and the run
//! fails unless the loss curves agree within 1e-9 and every rank's final shards equal
//! the single-process weights within 1e-9. Rank 0 prints the curve's ends and the
//! throughput.
//!
//! `cargo xtask run -n 4 --example train_candle -F dist-runtime/candle`
//! (tp = 2 when the size is even, dp the rest; `--release` for the throughput figure)
// The communicators handed to candle's layers are beyond the compile-time check: it
// warns about them (a `deprecated` use), which is expected here; the run-time checks
// cover every collective they make.
#![allow(deprecated)]

use candle_core::{Device, Tensor, Var};
use dist_runtime::candle::{all_reduce_grads, ColumnParallelLinear, RowParallelLinear, TensorComm};
use dist_runtime::prelude::*;

dist_runtime::group!(Dp);
dist_runtime::group!(Tp);

const BATCH: usize = 48; // global batch, split over dp (1, 2, 3, 4, 6 replicas)
const D_IN: usize = 16;
const HIDDEN: usize = 64; // split over tp
const D_OUT: usize = 8;
const STEPS: usize = 60;
const LR: f64 = 0.2;

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// A deterministic `rows × cols` matrix with entries in [-scale, scale].
fn mat(rows: usize, cols: usize, seed: u64, scale: f64) -> candle_core::Result<Tensor> {
    let v: Vec<f64> = (0..rows * cols)
        .map(|i| {
            let mut z = (i as u64).wrapping_add(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64 * 2.0 * scale - scale
        })
        .collect();
    Tensor::from_vec(v, (rows, cols), &Device::Cpu)
}

/// The data set (inputs and a smooth target of them) and the initial weights.
struct Problem {
    x: Tensor,
    y: Tensor,
    w1: Tensor,
    b1: Tensor,
    w2: Tensor,
    b2: Tensor,
}

fn problem() -> candle_core::Result<Problem> {
    let x = mat(BATCH, D_IN, 1, 1.0)?;
    let y = x.matmul(&mat(D_IN, D_OUT, 2, 0.5)?)?.sin()?;
    Ok(Problem {
        x,
        y,
        w1: mat(HIDDEN, D_IN, 3, (1.0 / D_IN as f64).sqrt())?,
        b1: mat(1, HIDDEN, 4, 0.1)?.reshape(HIDDEN)?,
        w2: mat(D_OUT, HIDDEN, 5, (1.0 / HIDDEN as f64).sqrt())?,
        b2: mat(1, D_OUT, 6, 0.1)?.reshape(D_OUT)?,
    })
}

/// `w ← w − lr·g` for each variable.
fn sgd(vars: &[Var], grads: &candle_core::backprop::GradStore) -> candle_core::Result<()> {
    for v in vars {
        let g = grads.get(v).ok_or_else(|| candle_core::Error::msg("a variable without a gradient"))?;
        v.set(&(v.as_tensor() - g.affine(LR, 0.0)?)?)?;
    }
    Ok(())
}

/// The same model in one process on the whole batch: the loss per step and the final
/// weights (W1, b1, W2, b2).
fn serial(p: &Problem) -> candle_core::Result<(Vec<f64>, Vec<Tensor>)> {
    let vars: Vec<Var> = [&p.w1, &p.b1, &p.w2, &p.b2].iter().map(|t| Var::from_tensor(t)).collect::<Result<_, _>>()?;
    let mut losses = Vec::new();
    for _ in 0..STEPS {
        let h = p.x.matmul(&vars[0].t()?)?.broadcast_add(&vars[1])?.tanh()?;
        let out = h.matmul(&vars[2].t()?)?.broadcast_add(&vars[3])?;
        let loss = (out - &p.y)?.sqr()?.mean_all()?;
        losses.push(loss.to_scalar::<f64>()?);
        sgd(&vars, &loss.backward()?)?;
    }
    Ok((losses, vars.iter().map(|v| v.as_tensor().clone()).collect()))
}

fn max_diff(a: &Tensor, b: &Tensor) -> candle_core::Result<f64> {
    (a - b)?.abs()?.flatten_all()?.max(0)?.to_scalar::<f64>()
}

#[spmd]
fn main(world: Comm<World>) -> Result<(), String> {
    let n = world.size();
    let tp_size = if n.is_multiple_of(2) { 2 } else { 1 };
    let dp_size = n / tp_size;
    if !BATCH.is_multiple_of(dp_size) {
        return Err(format!("the batch of {BATCH} does not split over {dp_size} replicas"));
    }
    let (dp, tp) = world.mesh2::<Dp, Tp>(dp_size, tp_size).map_err(err)?;
    let p = problem().map_err(err)?;

    // This replica's rows of the batch; this tp rank's shards of the layers.
    let rows = BATCH / dp_size;
    let (x, y) =
        (p.x.narrow(0, dp.rank() * rows, rows).map_err(err)?, p.y.narrow(0, dp.rank() * rows, rows).map_err(err)?);
    let fc1 = ColumnParallelLinear::from_full(&p.w1, Some(&p.b1), &tp, false).map_err(err)?;
    let fc2 = RowParallelLinear::from_full(&p.w2, Some(&p.b2), &tp, true).map_err(err)?;
    let vars: Vec<Var> = fc1.vars().into_iter().chain(fc2.vars()).collect();

    let mut losses = Vec::new();
    let t0 = std::time::Instant::now();
    for _ in 0..STEPS {
        let out = fc2.forward(&fc1.forward(&x).map_err(err)?.tanh().map_err(err)?).map_err(err)?;
        let loss = (out - &y).map_err(err)?.sqr().map_err(err)?.mean_all().map_err(err)?;
        let mut grads = loss.backward().map_err(err)?;
        // The replicas' gradients averaged: the gradient of the whole batch's mean loss.
        all_reduce_grads(&dp, &mut grads, &vars, true, 1 << 20).map_err(err)?;
        sgd(&vars, &grads).map_err(err)?;
        let mean = dp.all_reduce_tensor(&loss, ReduceOp::Sum).map_err(err)?.affine(1.0 / dp_size as f64, 0.0);
        losses.push(mean.map_err(err)?.to_scalar::<f64>().map_err(err)?);
    }
    let step = t0.elapsed().as_secs_f64() / STEPS as f64;

    let (want, final_w) = serial(&p).map_err(err)?;
    let curve = losses.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    let k = HIDDEN / tp_size;
    let shards = [
        final_w[0].narrow(0, tp.rank() * k, k),
        final_w[1].narrow(0, tp.rank() * k, k),
        final_w[2].narrow(1, tp.rank() * k, k),
        Ok(final_w[3].clone()),
    ];
    let mut weights = 0.0f64;
    for (v, s) in vars.iter().zip(shards) {
        weights = weights.max(max_diff(v.as_tensor(), &s.map_err(err)?).map_err(err)?);
    }
    let mut worst = [curve, weights];
    world.all_reduce(&mut worst, ReduceOp::Max).map_err(err)?;
    let ok = worst[0] <= 1e-9 && worst[1] <= 1e-9 && losses[STEPS - 1] < losses[0] / 2.0;
    if world.rank() == 0 {
        println!(
            "train_candle: dp × tp = {dp_size} × {tp_size}, {STEPS} SGD steps on {BATCH} rows: loss {:.4} → {:.4}; \
             against one process: loss curve within {:.1e}, weights within {:.1e}: {}; {:.2} ms/step, {:.0} rows/s",
            losses[0],
            losses[STEPS - 1],
            worst[0],
            worst[1],
            if ok { "OK" } else { "MISMATCH" },
            step * 1e3,
            BATCH as f64 / step
        );
    }
    if !ok {
        return Err(format!("rank {}: the parallel training differs from one process's", world.rank()));
    }
    Ok(())
}
