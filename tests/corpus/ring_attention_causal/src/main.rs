//! Sequence-parallel causal attention (ring attention), checked on rank 0 against
//! attention over the whole sequence.

mod args;
mod attention;
mod layout;
mod ring;

use dist_runtime::prelude::*;

#[spmd]
fn main(world: Comm<World>) -> Result<(), Box<dyn std::error::Error>> {
    let opts = args::Opts::from_env()?;
    let (r, n) = (world.rank(), world.size());
    let width = opts.heads * opts.dim;
    let lay = layout::Layout { seq: opts.seq, parts: n, width };
    // Every rank generates the same tensors and keeps its block.
    let q = attention::random(opts.seq * width, 1);
    let k = attention::random(opts.seq * width, 2);
    let v = attention::random(opts.seq * width, 3);
    let (a, b) = lay.block(r);
    let out = ring::ring_attention(
        &world,
        &lay,
        &q[a * width..b * width],
        lay.pack(r, &k, &v),
        opts.heads,
        opts.dim,
        opts.exchange,
    )?;

    let counts = lay.counts();
    let mut verdict = [0u8];
    if r == 0 {
        let mut all = vec![0.0; opts.seq * width];
        world.gather_v(&out, Some(&mut all[..]), &counts, 0)?;
        let want = attention::serial(&q, &k, &v, opts.seq, opts.heads, opts.dim);
        let worst = all.iter().zip(&want).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max);
        if worst < 1e-10 {
            verdict[0] = 1;
            println!(
                "ring attention, {n} ranks, seq {} ({:?}), {} heads x {}: OK (max abs diff {worst:.1e})",
                opts.seq, opts.exchange, opts.heads, opts.dim
            );
        } else {
            eprintln!("output differs from serial attention by {worst:e}");
        }
    } else {
        world.gather_v(&out, None, &counts, 0)?;
    }
    world.broadcast(&mut verdict, 0)?;
    if verdict[0] != 1 {
        return Err(format!("rank {r}: ring attention does not match serial attention").into());
    }
    Ok(())
}
