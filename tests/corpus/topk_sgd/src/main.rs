//! Data-parallel SGD with top-k gradient compression and error feedback, checked
//! against a serial simulation of every rank.
//!
//! cargo spmd run -n 4 -- --steps 12 --k 3

mod compress;
mod config;
mod data;
mod exchange;
mod serial;

use compress::{densify, TopK};
use config::Config;
use data::{Shard, DIM};
use dist_runtime::prelude::*;

type BoxError = Box<dyn std::error::Error>;

#[spmd]
fn main(world: Comm<World>) -> Result<(), BoxError> {
    let cfg = Config::from_args()?;
    let (rank, n) = (world.rank(), world.size());
    let shard = Shard::generate(rank);

    // Rank 0 initialises the model; everyone starts from its copy.
    let mut w = if rank == 0 { data::initial_weights() } else { vec![0.0f32; DIM] };
    world.broadcast(&mut w, 0)?;

    let mut comp = TopK::new(cfg.k, DIM);
    let mut sent = 0usize;
    for step in 1..=cfg.steps {
        let mine = comp.compress(&shard.gradient(&w), cfg.lr);
        sent += mine.idx.len();
        let all = exchange::all_gather_sparse(&world, &mine)?;
        let update = densify(&all.idx, &all.val, DIM);
        for (wi, u) in w.iter_mut().zip(&update) {
            *wi -= u / n as f32;
        }
        if step % cfg.log_every == 0 {
            let loss = exchange::mean_loss(&world, shard.loss(&w))?;
            if rank == 0 {
                println!("step {step}: mean loss {loss:.6}");
            }
        }
        if step % cfg.ckpt_every == 0 || step == cfg.steps {
            // A checkpoint as rank 0 would save it; every replica must hold the same.
            let ckpt = world.broadcast_object((rank == 0).then(|| (step, w.clone())), 0)?;
            if ckpt.0 != step || ckpt.1 != w {
                return Err(format!("rank {rank}: weights diverged from rank 0's checkpoint at step {step}").into());
            }
        }
    }

    let want = serial::simulate(n, cfg.steps, cfg.k, cfg.lr);
    let diff = w.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
    if diff > 1e-5 {
        return Err(format!("rank {rank}: weights differ from the serial simulation by {diff:e}").into());
    }
    let mut total_sent = [sent as u64];
    world.all_reduce(&mut total_sent, ReduceOp::Sum)?;
    if rank == 0 {
        println!("OK: {n} ranks, {} steps, k={}, {} entries sent in all, max diff {diff:e}", cfg.steps, cfg.k, total_sent[0]);
    }
    Ok(())
}
