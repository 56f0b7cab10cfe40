//! The rows of the embedding table one rank owns: `row % n == rank`.

use crate::data;
use crate::optim::Optimizer;

pub fn owner(id: u32, n: usize) -> usize {
    id as usize % n
}

pub struct Shard<O: Optimizer> {
    rank: usize,
    n: usize,
    dim: usize,
    /// Local row `i` is global row `i * n + rank`.
    rows: Vec<f32>,
    opt: O,
}

impl<O: Optimizer> Shard<O> {
    pub fn new(rank: usize, n: usize, total_rows: usize, dim: usize, seed: u64, opt: O) -> Shard<O> {
        let rows = (rank..total_rows).step_by(n).flat_map(|id| data::initial_row(seed, id, dim)).collect();
        Shard { rank, n, dim, rows, opt }
    }

    fn local(&self, id: u32) -> usize {
        debug_assert_eq!(owner(id, self.n), self.rank, "row {id} is not owned here");
        id as usize / self.n
    }

    pub fn row(&self, id: u32) -> &[f32] {
        let i = self.local(id);
        &self.rows[i * self.dim..(i + 1) * self.dim]
    }

    /// The rows asked for, one after another.
    pub fn gather_rows(&self, ids: &[u32]) -> Vec<f32> {
        ids.iter().flat_map(|&id| self.row(id).iter().copied()).collect()
    }

    /// Sums the gradients sent for each row (in the order they came) and applies the
    /// optimizer once per touched row, in row order.
    pub fn apply(&mut self, ids: &[u32], grads: &[f32]) {
        let dim = self.dim;
        let mut summed: std::collections::BTreeMap<u32, Vec<f32>> = std::collections::BTreeMap::new();
        for (id, g) in ids.iter().zip(grads.chunks_exact(dim)) {
            let acc = summed.entry(*id).or_insert_with(|| vec![0.0; dim]);
            acc.iter_mut().zip(g).for_each(|(a, g)| *a += g);
        }
        for (id, g) in summed {
            let i = self.local(id);
            self.opt.update(id, &mut self.rows[i * dim..(i + 1) * dim], &g);
        }
    }

    /// (global id, row) for every owned row.
    pub fn owned(&self) -> impl Iterator<Item = (u32, &[f32])> + '_ {
        self.rows.chunks_exact(self.dim).enumerate().map(|(i, r)| ((i * self.n + self.rank) as u32, r))
    }
}
