//! Pipeline parallelism, GPipe style: rank s holds layer s (`y = tanh(x·W_s)`); each
//! training step sends every microbatch's activations forward stage by stage, then
//! every microbatch's gradients backward in reverse order, accumulates the weight
//! gradients and takes an SGD step. Tags are typed (`Tag<f64>`), and the program is
//! `#[spmd(strict)]`: the compile-time check follows every send and recv of both loops
//! at sizes 1..=8 and proves they pair up without deadlock. Each stage checks its
//! weights, and the last stage the loss curve, against serial training of the whole
//! stack (within 1e-5 relative).
//!
//! `cargo xtask run -n 4 --example pipeline`

mod support;

use dist_runtime::prelude::*;
use support::{check_close, matmul, matmul_nt, matmul_tn, Rng};

const ACT: Tag<f64> = Tag::new(1);
const GRAD: Tag<f64> = Tag::new(2);
const MICRO: usize = 4; // microbatches per step
const B: usize = 3; // rows per microbatch
const D: usize = 6; // width of every layer
const STEPS: usize = 5;
const LR: f64 = 0.02;

fn layer(s: usize) -> Vec<f64> {
    Rng::new(40 + s as u64).vec(D * D, 0.6)
}

fn batch(step: usize, mb: usize) -> (Vec<f64>, Vec<f64>) {
    let mut g = Rng::new(1000 + (step * MICRO + mb) as u64);
    (g.vec(B * D, 1.0), g.vec(B * D, 0.8))
}

/// `y = tanh(x·w)`.
fn forward(x: &[f64], w: &[f64]) -> Vec<f64> {
    matmul(x, w, B, D, D).into_iter().map(f64::tanh).collect()
}

/// Given dL/dy: returns (dL/dx, dL/dw) for `y = tanh(x·w)`.
fn backward(x: &[f64], y: &[f64], w: &[f64], dy: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let dz: Vec<f64> = dy.iter().zip(y).map(|(g, y)| g * (1.0 - y * y)).collect();
    (matmul_nt(&dz, w, B, D, D), matmul_tn(x, &dz, B, D, D))
}

/// 0.5·‖y − target‖² and its gradient.
fn loss(y: &[f64], target: &[f64]) -> (f64, Vec<f64>) {
    let d: Vec<f64> = y.iter().zip(target).map(|(a, b)| a - b).collect();
    (0.5 * d.iter().map(|x| x * x).sum::<f64>(), d)
}

/// The whole stack of `stages` layers trained in one process.
fn serial(stages: usize) -> (Vec<Vec<f64>>, Vec<f64>) {
    let mut ws: Vec<Vec<f64>> = (0..stages).map(layer).collect();
    let mut losses = Vec::new();
    for step in 0..STEPS {
        let mut grads = vec![vec![0.0; D * D]; stages];
        let mut total = 0.0;
        for mb in 0..MICRO {
            let (x, target) = batch(step, mb);
            let mut acts = vec![x];
            for w in &ws {
                let y = forward(acts.last().expect("input"), w);
                acts.push(y);
            }
            let (l, mut dy) = loss(&acts[stages], &target);
            total += l;
            for s in (0..stages).rev() {
                let (dx, dw) = backward(&acts[s], &acts[s + 1], &ws[s], &dy);
                grads[s].iter_mut().zip(&dw).for_each(|(g, d)| *g += d);
                dy = dx;
            }
        }
        for (w, g) in ws.iter_mut().zip(&grads) {
            w.iter_mut().zip(g).for_each(|(w, g)| *w -= LR * g);
        }
        losses.push(total);
    }
    (ws, losses)
}

#[spmd(strict)]
fn main(world: Comm<World>) -> Result<(), String> {
    let (s, stages) = (world.rank(), world.size());
    let err = |e: dist_runtime::Error| e.to_string();
    let mut w = layer(s);
    let mut losses = Vec::new();
    for step in 0..STEPS {
        let mut inputs = Vec::new();
        let mut outputs = Vec::new();
        // Forward: fill the pipeline with every microbatch.
        for mb in 0..MICRO {
            let mut x = vec![0.0; B * D];
            if s == 0 {
                x = batch(step, mb).0;
            } else {
                world.recv(s - 1, ACT, &mut x).map_err(err)?;
            }
            let y = forward(&x, &w);
            if s + 1 < stages {
                world.send(s + 1, ACT, &y).map_err(err)?;
            }
            inputs.push(x);
            outputs.push(y);
        }
        // Backward: microbatches in reverse order, gradients flowing to stage 0.
        let mut grad = vec![0.0; D * D];
        let mut total = 0.0;
        for mb in (0..MICRO).rev() {
            let mut dy = vec![0.0; B * D];
            if s + 1 == stages {
                let (l, d) = loss(&outputs[mb], &batch(step, mb).1);
                total += l;
                dy = d;
            } else {
                world.recv(s + 1, GRAD, &mut dy).map_err(err)?;
            }
            let (dx, dw) = backward(&inputs[mb], &outputs[mb], &w, &dy);
            grad.iter_mut().zip(&dw).for_each(|(g, d)| *g += d);
            if s > 0 {
                world.send(s - 1, GRAD, &dx).map_err(err)?;
            }
        }
        w.iter_mut().zip(&grad).for_each(|(w, g)| *w -= LR * g);
        losses.push(total);
    }
    let (want, want_losses) = serial(stages);
    let d = check_close(&format!("stage {s} weights"), &w, &want[s], 1e-5)?;
    if s + 1 == stages {
        check_close("loss curve", &losses, &want_losses, 1e-5)?;
        println!("GPipe over {stages} stages, {MICRO} microbatches of {B} rows, {STEPS} steps");
        for (step, l) in losses.iter().enumerate() {
            println!("  step {step}  loss {l:.6}");
        }
        println!("last stage's weights match serial training: max relative difference {d:.2e}");
    }
    Ok(())
}
