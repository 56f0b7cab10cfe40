//! Rank 0 collects every token's output and gate probability, and recomputes the
//! whole layer in one process.

use crate::config::Config;
use crate::model::{make_expert, token, Gate};
use crate::routing::{plan_serial, Plan};
use dist_runtime::prelude::*;

const COUNT: Tag<u64> = Tag::new(1);
const OUT: Tag<f64> = Tag::new(2);
const GATE: Tag<f64> = Tag::new(3);

pub struct Collected {
    pub outputs: Vec<f64>,
    pub gates: Vec<f64>,
    pub dropped: u64,
}

/// Sends this rank's outputs to rank 0; rank 0 gets all of them, in token order.
pub fn collect(world: &Comm<World>, outputs: &[Vec<f64>], plan: &Plan) -> dist_runtime::Result<Option<Collected>> {
    let flat: Vec<f64> = outputs.concat();
    let gates: Vec<f64> = plan.routes.iter().map(|r| r.prob).collect();
    let mut dropped = [plan.dropped() as u64];
    if world.rank() != 0 {
        world.send(0, COUNT, &[outputs.len() as u64])?;
        world.send(0, OUT, &flat)?;
        world.send(0, GATE, &gates)?;
        world.reduce(&mut dropped, ReduceOp::Sum, 0)?;
        return Ok(None);
    }
    let dim = outputs.first().map_or(0, Vec::len);
    let mut all = Collected { outputs: flat, gates, dropped: 0 };
    for src in 1..world.size() {
        let mut count = [0u64];
        world.recv(src, COUNT, &mut count)?;
        let n = count[0] as usize;
        let mut out = vec![0.0; n * dim];
        world.recv(src, OUT, &mut out)?;
        let mut g = vec![0.0; n];
        world.recv(src, GATE, &mut g)?;
        all.outputs.extend(out);
        all.gates.extend(g);
    }
    world.reduce(&mut dropped, ReduceOp::Sum, 0)?;
    all.dropped = dropped[0];
    Ok(Some(all))
}

/// The layer on every token in one process: (outputs, plan).
pub fn serial_forward(cfg: &Config) -> (Vec<f64>, Plan) {
    let gate = Gate::new(cfg.seed, cfg.dim, cfg.experts);
    let xs: Vec<Vec<f64>> = (0..cfg.tokens).map(|g| token(cfg.seed, g, cfg.dim)).collect();
    let plan = plan_serial(&gate, &xs, cfg.experts, cfg.capacity);
    let experts: Vec<_> = (0..cfg.experts).map(|e| make_expert(cfg.seed, e, cfg.dim, cfg.act)).collect();
    let out = xs
        .iter()
        .zip(&plan.routes)
        .flat_map(|(x, r)| match (r.kept, cfg.policy) {
            (true, _) => experts[r.expert].forward(x).into_iter().map(|v| r.prob * v).collect(),
            (false, crate::config::DropPolicy::Passthrough) => x.clone(),
            (false, crate::config::DropPolicy::Zero) => vec![0.0; cfg.dim],
        })
        .collect();
    (out, plan)
}
