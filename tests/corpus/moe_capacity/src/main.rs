//! A mixture-of-experts layer with expert parallelism: E experts spread over the ranks
//! (unevenly when E % size != 0), top-1 gating, a capacity per expert beyond which
//! tokens are dropped, dispatch and combine with `all_to_all_v`, and the
//! Switch-Transformer load-balancing loss from the all-reduced expert load. Rank 0
//! compares every output with the same layer computed in one process.
//!
//! `cargo spmd run -n 3 -- --tokens 96 --experts 5 --dim 8 --capacity 1.25`

mod config;
mod dispatch;
mod model;
mod report;
mod routing;

use config::Config;
use dispatch::Dispatcher;
use dist_runtime::prelude::*;
use model::{token, Gate};
use routing::block;

#[spmd]
fn main(world: Comm<World>) -> Result<(), Box<dyn std::error::Error>> {
    let cfg = Config::from_args(std::env::args().skip(1))?;
    let (rank, size) = (world.rank(), world.size());

    // This rank's tokens: a contiguous, possibly uneven, slice of the global batch.
    let (t0, tn) = block(cfg.tokens, size, rank);
    let xs: Vec<Vec<f64>> = (t0..t0 + tn).map(|g| token(cfg.seed, g, cfg.dim)).collect();

    let gate = Gate::new(cfg.seed, cfg.dim, cfg.experts);
    let plan = routing::plan(&world, &gate, &xs, cfg.experts, cfg.capacity, cfg.tokens)?;
    let mut layer = Dispatcher::new(&world, cfg.experts, cfg.dim, cfg.seed, cfg.act);
    let outputs = layer.forward(&xs, &plan, cfg.policy)?;

    let Some(got) = report::collect(&world, &outputs, &plan)? else {
        return Ok(());
    };
    let (want, want_plan) = report::serial_forward(&cfg);
    let worst = got.outputs.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    if got.outputs.len() != want.len() || worst > 1e-12 {
        return Err(format!("outputs differ from the serial layer by {worst:e}").into());
    }
    let want_gates: Vec<f64> = want_plan.routes.iter().map(|r| r.prob).collect();
    if got.gates != want_gates {
        return Err("gate probabilities differ from the serial layer".into());
    }
    if got.dropped != want_plan.dropped() as u64 || plan.load != want_plan.load {
        return Err(format!("dropped {} (serial {}), load {:?} (serial {:?})", got.dropped, want_plan.dropped(), plan.load, want_plan.load).into());
    }
    if (plan.aux_loss - want_plan.aux_loss).abs() > 1e-12 * want_plan.aux_loss.abs().max(1.0) {
        return Err(format!("aux loss {} vs serial {}", plan.aux_loss, want_plan.aux_loss).into());
    }
    println!(
        "moe_capacity OK: {} tokens, {} experts on {size} ranks (rank 0 holds {:?}), capacity {} per expert, {} dropped, load {:?}, aux loss {:.6}, max diff {worst:.1e}",
        cfg.tokens, cfg.experts, layer.local_experts(), plan.capacity, got.dropped, plan.load, plan.aux_loss
    );
    Ok(())
}
