//! Tensor parallelism, Megatron style, inside a pp × dp × tp mesh
//! (`mesh::<(Pp, Dp, Tp)>`, torch's row-major `DeviceMesh` layout):
//! - an MLP block `gelu(X·A)·B` with A split by columns (column-parallel) and B by rows
//!   (row-parallel) across the tp ranks: each computes its slice with no communication,
//!   and one all_reduce over `Comm<Tp>` sums the partial outputs;
//! - a vocabulary-sharded embedding lookup (rows outside the shard are zero; all_reduce);
//! - a vocabulary-sharded softmax cross-entropy (MAX, then SUM all_reduces; the target's
//!   logit comes from the rank that owns it), averaged over the dp replicas;
//! - two pipeline stages when there are enough ranks: stage 0 runs the embedding and the
//!   MLP block, sends its output to the same tp shard of stage 1 over `Comm<Pp>`, and
//!   stage 1 runs the cross-entropy (a single stage runs everything).
//!
//! Each result is checked against the unsharded computation within 1e-5 relative.
//!
//! `cargo xtask run -n 8 --example tensor_parallel`   (tp = 2 when the size is even, pp = 2
//! when it is a multiple of 4, dp the rest)

mod support;

use dist_runtime::prelude::*;
use support::{check_close, columns, gelu, matmul, shard, Rng};

dist_runtime::group!(Pp);
dist_runtime::group!(Dp);
dist_runtime::group!(Tp);

/// Stage 0's MLP output, to the same tp shard of stage 1.
const Y: Tag<f64> = Tag::new(1);

const ROWS: usize = 5; // tokens per replica
const D: usize = 8; // model width
const F: usize = 16; // MLP width (split across tp)
const V: usize = 22; // vocabulary (split across tp)

fn err(e: dist_runtime::Error) -> String {
    e.to_string()
}

/// The replica's input and the full weights, the same on every rank.
fn weights() -> (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>) {
    let mut g = Rng::new(3);
    (g.vec(D * F, 0.5), g.vec(F * D, 0.5), g.vec(V * D, 1.0), g.vec(D * V, 0.5))
}

fn input(replica: usize) -> (Vec<f64>, Vec<usize>) {
    let mut g = Rng::new(100 + replica as u64);
    let x = g.vec(ROWS * D, 1.0);
    let tokens = (0..ROWS).map(|_| (g.next_u64() % V as u64) as usize).collect();
    (x, tokens)
}

fn mlp_serial(x: &[f64], a: &[f64], b: &[f64]) -> Vec<f64> {
    let z: Vec<f64> = matmul(x, a, ROWS, D, F).into_iter().map(gelu).collect();
    matmul(&z, b, ROWS, F, D)
}

/// Cross-entropy of each row of `logits` (ROWS × V) against `targets`.
fn xent_serial(logits: &[f64], targets: &[usize]) -> Vec<f64> {
    (0..ROWS)
        .map(|i| {
            let row = &logits[i * V..(i + 1) * V];
            let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            (row.iter().map(|l| (l - m).exp()).sum::<f64>()).ln() + m - row[targets[i]]
        })
        .collect()
}

#[spmd(strict)]
fn main(world: Comm<World>) -> Result<(), String> {
    let n = world.size();
    let tp_size = if n.is_multiple_of(2) { 2 } else { 1 };
    let pp_size = if n.is_multiple_of(4) { 2 } else { 1 };
    let (pp, dp, tp) = world.mesh::<(Pp, Dp, Tp)>([pp_size, n / (pp_size * tp_size), tp_size]).map_err(err)?;
    let (stage, replica, t) = (pp.rank(), dp.rank(), tp.rank());
    let last = pp_size - 1;
    let (a, b, emb, out) = weights();
    let (x, tokens) = input(replica);
    let (v0, v1) = shard(V, tp_size, t);
    let mut y = vec![0.0; ROWS * D];
    let (mut d_mlp, mut d_emb) = (0.0, 0.0);

    if stage == 0 {
        // Embedding: rows [v0, v1) of the table live here.
        let mut e = vec![0.0; ROWS * D];
        for (i, &tok) in tokens.iter().enumerate() {
            if (v0..v1).contains(&tok) {
                e[i * D..(i + 1) * D].copy_from_slice(&emb[tok * D..(tok + 1) * D]);
            }
        }
        tp.all_reduce(&mut e, ReduceOp::Sum).map_err(err)?;
        let e_serial: Vec<f64> = tokens.iter().flat_map(|&tok| emb[tok * D..(tok + 1) * D].to_vec()).collect();
        d_emb = check_close("embedding lookup", &e, &e_serial, 1e-5)?;

        // MLP block: A's columns and B's rows [f0, f1) live here.
        let (f0, f1) = shard(F, tp_size, t);
        let a_local = columns(&a, D, F, f0, f1);
        let b_local = b[f0 * D..f1 * D].to_vec();
        let z: Vec<f64> = matmul(&x, &a_local, ROWS, D, f1 - f0).into_iter().map(gelu).collect();
        y = matmul(&z, &b_local, ROWS, f1 - f0, D);
        tp.all_reduce(&mut y, ReduceOp::Sum).map_err(err)?;
        d_mlp = check_close("MLP block", &y, &mlp_serial(&x, &a, &b), 1e-5)?;
        if last > 0 {
            pp.send(last, Y, &y).map_err(err)?;
        }
    }

    let mut mean = [0.0f64];
    let mut d_xent = 0.0;
    if stage == last {
        if last > 0 {
            pp.recv(0, Y, &mut y).map_err(err)?;
        }
        // Cross-entropy over the vocabulary shard [v0, v1): logits = y · out[:, v0..v1].
        let targets: Vec<usize> = tokens.iter().map(|&tok| (tok * 7 + 3) % V).collect();
        let logits = matmul(&y, &columns(&out, D, V, v0, v1), ROWS, D, v1 - v0);
        let w = v1 - v0;
        let mut m: Vec<f64> =
            (0..ROWS).map(|i| logits[i * w..(i + 1) * w].iter().cloned().fold(f64::NEG_INFINITY, f64::max)).collect();
        tp.all_reduce(&mut m, ReduceOp::Max).map_err(err)?;
        let mut s: Vec<f64> =
            (0..ROWS).map(|i| logits[i * w..(i + 1) * w].iter().map(|l| (l - m[i]).exp()).sum()).collect();
        tp.all_reduce(&mut s, ReduceOp::Sum).map_err(err)?;
        let mut tgt: Vec<f64> = (0..ROWS)
            .map(|i| if (v0..v1).contains(&targets[i]) { logits[i * w + targets[i] - v0] } else { 0.0 })
            .collect();
        tp.all_reduce(&mut tgt, ReduceOp::Sum).map_err(err)?;
        let loss: Vec<f64> = (0..ROWS).map(|i| s[i].ln() + m[i] - tgt[i]).collect();
        let full_logits = matmul(&mlp_serial(&x, &a, &b), &out, ROWS, D, V);
        d_xent = check_close("sharded cross-entropy", &loss, &xent_serial(&full_logits, &targets), 1e-5)?;

        // The mean loss over the data-parallel replicas.
        mean = [loss.iter().sum::<f64>() / ROWS as f64];
        dp.all_reduce(&mut mean, ReduceOp::Avg).map_err(err)?;
    }
    // Every stage learns the loss and the differences the last stage measured.
    let mut seen = [mean[0], d_xent];
    pp.broadcast(&mut seen, last).map_err(err)?;
    let want: f64 = (0..dp.size())
        .map(|rep| {
            let (x, tokens) = input(rep);
            let targets: Vec<usize> = tokens.iter().map(|&tok| (tok * 7 + 3) % V).collect();
            let l = xent_serial(&matmul(&mlp_serial(&x, &a, &b), &out, ROWS, D, V), &targets);
            l.iter().sum::<f64>() / ROWS as f64
        })
        .sum::<f64>()
        / dp.size() as f64;
    check_close("mean loss over replicas", &seen[..1], &[want], 1e-5)?;
    if world.rank() == 0 {
        println!("mesh {pp_size} (pp) × {} (dp) × {tp_size} (tp) over {n} ranks", dp.size());
        println!("sharded embedding lookup:              max relative difference {d_emb:.2e}");
        println!("MLP block (column- then row-parallel): max relative difference {d_mlp:.2e}");
        println!("sharded softmax cross-entropy:         max relative difference {:.2e}", seen[1]);
        println!("mean loss over {} replicas: {:.6} (serial {want:.6})", dp.size(), seen[0]);
    }
    Ok(())
}
