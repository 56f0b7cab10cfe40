//! Sequence parallelism with ring attention: the sequence is split into one block of
//! queries, keys and values per rank. Each rank attends its queries to the key/value
//! block it holds, then passes that block to `(r + 1) % n` and receives the next from
//! `(r + n − 1) % n` with `sendrecv`, n times, combining the partial results with an
//! online softmax (running max and sum). The output equals full attention computed
//! serially (checked within 1e-5 relative).
//!
//! `cargo xtask run -n 4 --example sequence_parallel`

mod support;

use dist_runtime::prelude::*;
use support::{check_close, matmul_nt, shard, softmax, Rng};

const KV: Tag<f64> = Tag::new(5);
const L: usize = 37; // sequence length (not a multiple of most sizes)
const D: usize = 8; // head dimension

fn qkv() -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let mut g = Rng::new(21);
    (g.vec(L * D, 1.0), g.vec(L * D, 1.0), g.vec(L * D, 1.0))
}

/// softmax(Q·Kᵀ/√D)·V over the whole sequence.
fn full_attention(q: &[f64], k: &[f64], v: &[f64]) -> Vec<f64> {
    let scale = 1.0 / (D as f64).sqrt();
    let mut out = vec![0.0; L * D];
    let s = matmul_nt(q, k, L, D, L);
    for i in 0..L {
        let mut row: Vec<f64> = s[i * L..(i + 1) * L].iter().map(|x| x * scale).collect();
        softmax(&mut row);
        for (j, p) in row.iter().enumerate() {
            for c in 0..D {
                out[i * D + c] += p * v[j * D + c];
            }
        }
    }
    out
}

#[spmd(strict)]
fn main(world: Comm<World>) -> Result<(), String> {
    let (r, n) = (world.rank(), world.size());
    let err = |e: dist_runtime::Error| e.to_string();
    let (q, k, v) = qkv();
    let (q0, q1) = shard(L, n, r);
    let rows = q1 - q0;
    let q_mine = &q[q0 * D..q1 * D];
    // The key/value block in hand starts as ours: [keys | values], padded to the largest
    // block so every rank sends and receives the same length.
    let most = (0..n).map(|j| shard(L, n, j)).map(|(a, b)| b - a).max().unwrap_or(0);
    let mut block = vec![0.0; 2 * most * D + 1];
    let load = |blk: &mut Vec<f64>, j: usize| {
        let (a, b) = shard(L, n, j);
        blk[..(b - a) * D].copy_from_slice(&k[a * D..b * D]);
        blk[most * D..most * D + (b - a) * D].copy_from_slice(&v[a * D..b * D]);
        blk[2 * most * D] = j as f64;
    };
    load(&mut block, r);
    let scale = 1.0 / (D as f64).sqrt();
    let (mut m, mut s, mut acc) = (vec![f64::NEG_INFINITY; rows], vec![0.0; rows], vec![0.0; rows * D]);
    for step in 0..n {
        let owner = block[2 * most * D] as usize;
        let (a, b) = shard(L, n, owner);
        let len = b - a;
        let scores = matmul_nt(q_mine, &block[..len * D], rows, D, len);
        for i in 0..rows {
            // Online softmax: rescale what we have to the new running max.
            let row_max = scores[i * len..(i + 1) * len].iter().fold(f64::NEG_INFINITY, |x, y| x.max(y * scale));
            let new_m = m[i].max(row_max);
            let keep = (m[i] - new_m).exp();
            s[i] *= keep;
            acc[i * D..(i + 1) * D].iter_mut().for_each(|x| *x *= keep);
            for j in 0..len {
                let p = (scores[i * len + j] * scale - new_m).exp();
                s[i] += p;
                for c in 0..D {
                    acc[i * D + c] += p * block[most * D + j * D + c];
                }
            }
            m[i] = new_m;
        }
        if step + 1 < n {
            let mut next = vec![0.0; block.len()];
            world.sendrecv((r + 1) % n, KV, &block, (r + n - 1) % n, &mut next).map_err(err)?;
            block = next;
        }
    }
    let out: Vec<f64> = (0..rows * D).map(|x| acc[x] / s[x / D]).collect();
    let want = full_attention(&q, &k, &v);
    let d = check_close(&format!("rank {r}'s attention rows {q0}..{q1}"), &out, &want[q0 * D..q1 * D], 1e-5)?;
    let mut worst = [d];
    world.all_reduce(&mut worst, ReduceOp::Max).map_err(err)?;
    if r == 0 {
        println!("ring attention over {n} ranks, sequence {L} (blocks of {}..={most} rows), head dim {D}", L / n);
        println!("matches full attention: max relative difference {:.2e}", worst[0]);
    }
    Ok(())
}
