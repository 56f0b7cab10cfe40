//! Expert placement and the experts themselves (`y = tanh(x·W_e)`, W_e: D × D). Expert
//! `e` lives on exactly one rank; a rank may host none when there are fewer experts
//! than ranks.

use dist_runtime::prelude::*;

use crate::gate::{hash_f32, D};

/// First expert of each rank, experts split as evenly as possible (lower ranks take the
/// extra ones).
pub fn first_expert(rank: usize, experts: usize, ranks: usize) -> usize {
    rank * (experts / ranks) + rank.min(experts % ranks)
}

pub fn owner_of(e: usize, experts: usize, ranks: usize) -> usize {
    (0..ranks).rev().find(|&r| first_expert(r, experts, ranks) <= e).unwrap_or(0)
}

/// Weights of expert `e` in MoE layer `layer`, as the owner loads them.
pub fn load_expert(layer: usize, e: usize) -> Vec<f32> {
    (0..D * D).map(|i| 0.8 * hash_f32(7_000 + 100 * layer as u64 + e as u64, i as u64)).collect()
}

pub fn apply(w: &[f32], tok: &[f32]) -> Vec<f32> {
    (0..D).map(|j| (0..D).map(|k| tok[k] * w[k * D + j]).sum::<f32>().tanh()).collect()
}

/// The experts of one MoE layer hosted on this rank.
pub struct LocalExperts {
    pub num_experts: usize,
    pub first: usize,
    pub weights: Vec<Vec<f32>>,
}

impl LocalExperts {
    pub fn load(layer: usize, num_experts: usize, world: &Comm<World>) -> Self {
        let (r, n) = (world.rank(), world.size());
        let first = first_expert(r, num_experts, n);
        let end = first_expert(r + 1, num_experts, n);
        let weights = (first..end).map(|e| load_expert(layer, e)).collect();
        LocalExperts { num_experts, first, weights }
    }

    pub fn owns(&self, e: usize) -> bool {
        (self.first..self.first + self.weights.len()).contains(&e)
    }

    /// Run every received token through its expert.
    pub fn forward(&self, toks: &[f32], ids: &[u32]) -> Vec<f32> {
        toks.chunks(D).zip(ids).flat_map(|(tok, &e)| apply(&self.weights[e as usize - self.first], tok)).collect()
    }

    /// Every expert of the layer on every rank, each broadcast from its owner (what a
    /// serial evaluation or a consolidated checkpoint needs).
    pub fn replicate(&self, world: &Comm<World>) -> dist_runtime::Result<Vec<Vec<f32>>> {
        let mut all = vec![vec![0.0f32; D * D]; self.num_experts];
        for (e, w) in all.iter_mut().enumerate() {
            if self.owns(e) {
                w.copy_from_slice(&self.weights[e - self.first]);
            }
            world.broadcast(w, owner_of(e, self.num_experts, world.size()))?;
        }
        Ok(all)
    }
}
