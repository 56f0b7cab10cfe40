//! Expert-parallel token exchange: counts first, then tokens and their expert ids,
//! and the inverse exchange that brings expert outputs home.

use dist_runtime::prelude::*;

use crate::experts::{owner_of, LocalExperts};
use crate::gate::{Route, D};

/// What one rank sent: the permutation that grouped its tokens by destination rank and
/// how many went to each rank.
pub struct Plan {
    order: Vec<usize>,
    send_counts: Vec<usize>,
    recv_counts: Vec<usize>,
}

fn times(counts: &[usize], k: usize) -> Vec<usize> {
    counts.iter().map(|c| c * k).collect()
}

/// Send every token to the rank hosting its expert; returns the received tokens, their
/// expert ids, and the plan for the way back.
pub fn dispatch(world: &Comm<World>, x: &[f32], routes: &[Route], num_experts: usize) -> dist_runtime::Result<(Vec<f32>, Vec<u32>, Plan)> {
    let n = world.size();
    let dest: Vec<usize> = routes.iter().map(|r| owner_of(r.expert, num_experts, n)).collect();
    let mut order: Vec<usize> = (0..routes.len()).collect();
    order.sort_by_key(|&t| (dest[t], routes[t].expert));
    let mut send_counts = vec![0usize; n];
    dest.iter().for_each(|&d| send_counts[d] += 1);

    let mut recv_counts64 = vec![0u64; n];
    let send_counts64: Vec<u64> = send_counts.iter().map(|&c| c as u64).collect();
    world.all_to_all(&send_counts64, &mut recv_counts64)?;
    let recv_counts: Vec<usize> = recv_counts64.iter().map(|&c| c as usize).collect();
    let received: usize = recv_counts.iter().sum();

    let send_tok: Vec<f32> = order.iter().flat_map(|&t| x[t * D..(t + 1) * D].iter().copied()).collect();
    let send_ids: Vec<u32> = order.iter().map(|&t| routes[t].expert as u32).collect();
    let mut recv_tok = vec![0.0f32; received * D];
    let mut recv_ids = vec![0u32; received];
    world.all_to_all_v(&send_tok, &times(&send_counts, D), &mut recv_tok, &times(&recv_counts, D))?;
    world.all_to_all_v(&send_ids, &send_counts, &mut recv_ids, &recv_counts)?;
    Ok((recv_tok, recv_ids, Plan { order, send_counts, recv_counts }))
}

/// Apply the local experts to what arrived and send the results back; returns one output
/// row per local token, in the original token order.
pub fn compute_and_combine(world: &Comm<World>, experts: &LocalExperts, toks: &[f32], ids: &[u32], plan: &Plan) -> dist_runtime::Result<Vec<f32>> {
    let out = experts.forward(toks, ids);
    let mut back = vec![0.0f32; plan.order.len() * D];
    world.all_to_all_v(&out, &times(&plan.recv_counts, D), &mut back, &times(&plan.send_counts, D))?;
    let mut y = vec![0.0f32; back.len()];
    for (slot, &t) in plan.order.iter().enumerate() {
        y[t * D..(t + 1) * D].copy_from_slice(&back[slot * D..(slot + 1) * D]);
    }
    Ok(y)
}

/// Switch-Transformer load-balancing loss `E · Σ_e f_e · P_e` over all ranks' tokens,
/// with the global load of every expert.
pub fn balance_loss(world: &Comm<World>, routes: &[Route], probs: &[Vec<f32>], num_experts: usize) -> dist_runtime::Result<(f64, Vec<u64>)> {
    let mut stats = vec![0.0f64; 2 * num_experts + 1];
    for (r, p) in routes.iter().zip(probs) {
        stats[r.expert] += 1.0;
        p.iter().enumerate().for_each(|(e, &pe)| stats[num_experts + e] += pe as f64);
    }
    stats[2 * num_experts] = routes.len() as f64;
    world.all_reduce(&mut stats, ReduceOp::Sum)?;
    let total = stats[2 * num_experts];
    let loss = (0..num_experts).map(|e| (stats[e] / total) * (stats[num_experts + e] / total)).sum::<f64>() * num_experts as f64;
    Ok((loss, stats[..num_experts].iter().map(|&c| c as u64).collect()))
}
