//! Expert parallelism: kept tokens travel to the rank holding their expert and back.

use crate::config::{Activation, DropPolicy};
use crate::model::{make_expert, Expert};
use crate::routing::{block, Plan};
use dist_runtime::prelude::*;

pub struct Dispatcher {
    world: Comm<World>,
    dim: usize,
    /// owner[e]: the rank holding expert e.
    owner: Vec<usize>,
    first: usize,
    experts: Vec<Box<dyn Expert>>,
    pub served: usize,
}

impl Dispatcher {
    pub fn new(world: &Comm<World>, n_experts: usize, dim: usize, seed: u64, act: Activation) -> Dispatcher {
        let size = world.size();
        let owner: Vec<usize> = (0..size)
            .flat_map(|r| std::iter::repeat_n(r, block(n_experts, size, r).1))
            .collect();
        let (first, count) = block(n_experts, size, world.rank());
        let experts = (first..first + count).map(|e| make_expert(seed, e, dim, act)).collect();
        Dispatcher { world: world.clone(), dim, owner, first, experts, served: 0 }
    }

    pub fn local_experts(&self) -> std::ops::Range<usize> {
        self.first..self.first + self.experts.len()
    }

    /// Runs this rank's share of the experts on tokens (one id per row of `rows`).
    fn serve(&mut self, ids: &[u32], rows: &[f64]) -> Result<Vec<f64>, String> {
        let mut out = Vec::with_capacity(rows.len());
        for (&e, x) in ids.iter().zip(rows.chunks(self.dim)) {
            let local = (e as usize).checked_sub(self.first).filter(|&i| i < self.experts.len());
            let expert = local.ok_or_else(|| format!("expert {e} is not on rank {}", self.world.rank()))?;
            out.extend(self.experts[expert].forward(x));
        }
        self.served += ids.len();
        Ok(out)
    }

    /// The layer's output for this rank's tokens.
    pub fn forward(&mut self, xs: &[Vec<f64>], plan: &Plan, policy: DropPolicy) -> Result<Vec<Vec<f64>>, Box<dyn std::error::Error>> {
        let n = self.world.size();
        let d = self.dim;
        let mut buckets: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (t, r) in plan.routes.iter().enumerate().filter(|(_, r)| r.kept) {
            buckets[self.owner[r.expert]].push(t);
        }
        let send_tokens: Vec<usize> = buckets.iter().map(Vec::len).collect();

        // How many tokens each rank sends here.
        let counts_out: Vec<u64> = send_tokens.iter().map(|&c| c as u64).collect();
        let mut counts_in = vec![0u64; n];
        self.world.all_to_all(&counts_out, &mut counts_in)?;
        let recv_tokens: Vec<usize> = counts_in.iter().map(|&c| c as usize).collect();
        let rows_of = |tokens: &[usize]| tokens.iter().map(|t| t * d).collect::<Vec<usize>>();

        // Dispatch: expert ids, then the rows.
        let ids: Vec<u32> = buckets.iter().flatten().map(|&t| plan.routes[t].expert as u32).collect();
        let mut ids_in = vec![0u32; recv_tokens.iter().sum()];
        self.world.all_to_all_v(&ids, &send_tokens, &mut ids_in, &recv_tokens)?;
        let rows: Vec<f64> = buckets.iter().flatten().flat_map(|&t| xs[t].iter().copied()).collect();
        let mut rows_in = vec![0.0; ids_in.len() * d];
        self.world.all_to_all_v(&rows, &rows_of(&send_tokens), &mut rows_in, &rows_of(&recv_tokens))?;

        // Experts, then the results go back where they came from.
        let results = self.serve(&ids_in, &rows_in)?;
        let mut back = vec![0.0; rows.len()];
        self.world.all_to_all_v(&results, &rows_of(&recv_tokens), &mut back, &rows_of(&send_tokens))?;

        // Combine: scale by the gate probability; dropped tokens follow the policy.
        let mut out: Vec<Vec<f64>> = xs
            .iter()
            .map(|x| match policy {
                DropPolicy::Passthrough => x.clone(),
                DropPolicy::Zero => vec![0.0; d],
            })
            .collect();
        for (&t, y) in buckets.iter().flatten().zip(back.chunks(d)) {
            let p = plan.routes[t].prob;
            out[t] = y.iter().map(|v| p * v).collect();
        }
        Ok(out)
    }
}
