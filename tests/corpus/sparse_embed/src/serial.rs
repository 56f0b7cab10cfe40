//! The reference: one process doing every rank's step, in rank order.

use crate::cli::Config;
use crate::data;
use crate::optim::Optimizer;
use std::collections::BTreeMap;

pub struct Reference {
    /// rows × dim.
    pub table: Vec<f32>,
    /// Total loss of each step.
    pub losses: Vec<f64>,
}

pub fn train<O: Optimizer>(cfg: &Config, n: usize, mut opt: O) -> Reference {
    let dim = cfg.dim;
    let mut table: Vec<f32> = (0..cfg.rows).flat_map(|id| data::initial_row(cfg.seed, id, dim)).collect();
    let mut losses = Vec::with_capacity(cfg.steps);
    let scale = 1.0 / (cfg.batch * n) as f32;
    for step in 0..cfg.steps {
        let mut summed: BTreeMap<u32, Vec<f32>> = BTreeMap::new();
        let mut total = 0.0f64;
        for rank in 0..n {
            let batch = data::batch(cfg.seed, rank, step, cfg.batch, cfg.rows);
            let asked: Vec<u32> = data::outbox(&batch, n).into_values().flatten().collect();
            let rows: Vec<f32> = asked.iter().flat_map(|&id| table[id as usize * dim..(id as usize + 1) * dim].iter().copied()).collect();
            let (loss, grads) = data::loss_and_grads(&batch, &asked, &rows, dim, scale);
            total += loss;
            for (id, g) in asked.iter().zip(grads.chunks_exact(dim)) {
                let acc = summed.entry(*id).or_insert_with(|| vec![0.0; dim]);
                acc.iter_mut().zip(g).for_each(|(a, g)| *a += g);
            }
        }
        for (id, g) in summed {
            let i = id as usize;
            opt.update(id, &mut table[i * dim..(i + 1) * dim], &g);
        }
        losses.push(total);
    }
    Reference { table, losses }
}
