//! Top-1 routing with a per-expert capacity: a token is kept while its expert has
//! room, in global token order (rank 0's tokens first, then rank 1's, ...).

use crate::model::Gate;
use dist_runtime::prelude::*;

/// `[start, start + len)` of part `idx` of `n` items over `parts` (the first `n % parts`
/// parts one longer).
pub fn block(n: usize, parts: usize, idx: usize) -> (usize, usize) {
    let (base, rem) = (n / parts, n % parts);
    (idx * base + idx.min(rem), base + usize::from(idx < rem))
}

pub fn capacity(factor: f64, tokens: usize, experts: usize) -> usize {
    (factor * tokens as f64 / experts as f64).ceil() as usize
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Route { pub expert: usize, pub prob: f64, pub kept: bool }

#[derive(Clone, Debug)]
pub struct Plan {
    pub routes: Vec<Route>,
    pub capacity: usize,
    /// Tokens routed to each expert over all ranks (before dropping).
    pub load: Vec<u64>,
    /// Switch-Transformer load-balancing loss: E · Σ_e f_e · P_e.
    pub aux_loss: f64,
}

impl Plan {
    pub fn dropped(&self) -> usize {
        self.routes.iter().filter(|r| !r.kept).count()
    }
}

/// Routes this rank's tokens; `offsets[e]` are the tokens of lower ranks routed to e.
fn route_local(gate: &Gate, xs: &[Vec<f64>], offsets: &[u64], cap: usize) -> Vec<Route> {
    let mut seen = offsets.to_vec();
    xs.iter()
        .map(|x| {
            let (expert, prob) = Gate::top1(&gate.probs(x));
            let kept = (seen[expert] as usize) < cap;
            seen[expert] += 1;
            Route { expert, prob, kept }
        })
        .collect()
}

fn aux_loss(load: &[u64], mass: &[f64], tokens: usize) -> f64 {
    let t = tokens as f64;
    load.len() as f64 * load.iter().zip(mass).map(|(&l, &m)| (l as f64 / t) * (m / t)).sum::<f64>()
}

pub fn plan(world: &Comm<World>, gate: &Gate, xs: &[Vec<f64>], experts: usize, factor: f64, total_tokens: usize) -> dist_runtime::Result<Plan> {
    let mut counts = vec![0u64; experts];
    let mut mass = vec![0.0f64; experts];
    for x in xs {
        let p = gate.probs(x);
        counts[Gate::top1(&p).0] += 1;
        mass.iter_mut().zip(&p).for_each(|(m, q)| *m += q);
    }
    let mut offsets = counts.clone();
    world.exscan(&mut offsets, ReduceOp::Sum)?;
    let mut load = counts;
    world.all_reduce(&mut load, ReduceOp::Sum)?;
    world.all_reduce(&mut mass, ReduceOp::Sum)?;
    let cap = capacity(factor, total_tokens, experts);
    Ok(Plan { routes: route_local(gate, xs, &offsets, cap), capacity: cap, aux_loss: aux_loss(&load, &mass, total_tokens), load })
}

/// The same routing for all tokens in one process.
pub fn plan_serial(gate: &Gate, xs: &[Vec<f64>], experts: usize, factor: f64) -> Plan {
    let cap = capacity(factor, xs.len(), experts);
    let routes = route_local(gate, xs, &vec![0; experts], cap);
    let mut load = vec![0u64; experts];
    let mut mass = vec![0.0; experts];
    for x in xs {
        let p = gate.probs(x);
        load[Gate::top1(&p).0] += 1;
        mass.iter_mut().zip(&p).for_each(|(m, q)| *m += q);
    }
    Plan { routes, capacity: cap, aux_loss: aux_loss(&load, &mass, xs.len()), load }
}
