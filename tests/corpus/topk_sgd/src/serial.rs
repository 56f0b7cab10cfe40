//! All ranks simulated in one process, in the same order of operations.

use crate::compress::{densify, TopK};
use crate::data::{initial_weights, Shard, DIM};

pub fn simulate(n: usize, steps: usize, k: usize, lr: f32) -> Vec<f32> {
    let shards: Vec<Shard> = (0..n).map(Shard::generate).collect();
    let mut comp: Vec<TopK> = (0..n).map(|_| TopK::new(k, DIM)).collect();
    let mut w = initial_weights();
    for _ in 0..steps {
        let mut idx = Vec::new();
        let mut val = Vec::new();
        for r in 0..n {
            let s = comp[r].compress(&shards[r].gradient(&w), lr);
            idx.extend(s.idx);
            val.extend(s.val);
        }
        let update = densify(&idx, &val, DIM);
        for (wi, u) in w.iter_mut().zip(&update) {
            *wi -= u / n as f32;
        }
    }
    w
}
