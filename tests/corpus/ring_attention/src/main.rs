//! Sequence-parallel ring attention. Each rank owns a contiguous block of the sequence
//! (its queries, keys and values); the key/value blocks travel around the ring for
//! `size` steps while each rank folds them into its queries' online softmax. The
//! gathered output is checked against serial full attention.
//!
//!     cargo spmd run -n 4 -- --seq 37 --dim 8 [--batched]

mod attention;
mod config;
mod ring;
mod tensor;

use dist_runtime::prelude::*;

use attention::{full_attention, OnlineSoftmax};
use config::Config;
use ring::{KvBlock, Ring};
use tensor::{max_rel_diff, Mat, Rng};

fn inputs(cfg: &Config, seed: u64) -> (Mat, Mat, Mat) {
    let mut rng = Rng::new(seed);
    let q = Mat::random(cfg.seq_len, cfg.head_dim, &mut rng);
    let k = Mat::random(cfg.seq_len, cfg.head_dim, &mut rng);
    let v = Mat::random(cfg.seq_len, cfg.head_dim, &mut rng);
    (q, k, v)
}

#[spmd]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let cfg = Config::from_args();
    let mut ring = Ring::new(world.clone(), cfg.seq_len, cfg.batched);
    let (rank, size) = (ring.rank(), ring.size());

    let seed = ring.agree_on_seed(cfg.seed)?;
    // Every rank could generate everything; it keeps only its own block.
    let (q, k, v) = inputs(&cfg, seed);
    let mine = ring.rows_of(rank);
    let mut state = OnlineSoftmax::new(q.slice_rows(mine.clone()));
    let mut held = KvBlock { owner: rank, k: k.slice_rows(mine.clone()), v: v.slice_rows(mine.clone()) };

    for step in 0..size {
        state.absorb(&held.k, &held.v);
        if step + 1 < size {
            held = ring.rotate(&held)?;
        }
    }
    let out = state.finish();

    let gathered = ring.gather_rows(&out)?;
    let want = full_attention(&q, &k, &v);
    let err = ring.max_over_ranks(max_rel_diff(&gathered.data, &want.data))?;
    if err > cfg.tol {
        return Err(dist_runtime::Error::Mismatch {
            comm: "World".into(),
            msg: format!("rank {rank}: ring attention differs from full attention by {err:.3e} (tol {:.1e})", cfg.tol),
        });
    }
    if rank == 0 {
        println!(
            "OK ring_attention ranks={size} seq={} dim={} batched={} max_rel_err={err:.2e}",
            cfg.seq_len, cfg.head_dim, cfg.batched
        );
    }
    Ok(())
}
