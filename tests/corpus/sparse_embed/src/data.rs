//! Synthetic data: a PRNG, initial rows, target vectors, and each rank's mini-batches.

use std::collections::{BTreeMap, HashMap};

pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) | 1)
    }

    /// xorshift64*.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }
}

/// Row `id`'s initial embedding, the same wherever it is computed.
pub fn initial_row(seed: u64, id: usize, dim: usize) -> Vec<f32> {
    let mut g = Rng::new(seed ^ (id as u64).wrapping_mul(0x9E37_79B9));
    (0..dim).map(|_| g.unit() - 0.5).collect()
}

/// What row `id` should learn: a fixed pattern per row.
pub fn target(id: u32, dim: usize) -> impl Iterator<Item = f32> {
    (0..dim).map(move |k| (((id as usize * 7 + k * 3) % 11) as f32 - 5.0) / 5.0)
}

/// The ids rank `rank` trains on at `step`: skewed towards low ids, so hot rows are
/// asked for by several ranks at once and some owners get nothing from some ranks.
pub fn batch(seed: u64, rank: usize, step: usize, size: usize, rows: usize) -> Vec<u32> {
    let mut g = Rng::new(seed.wrapping_add((step as u64) << 20).wrapping_add(rank as u64 * 7919 + 1));
    (0..size)
        .map(|_| {
            let u = g.unit();
            ((u * u * rows as f32) as usize).min(rows - 1) as u32
        })
        .collect()
}

/// Loss and per-row gradient of a batch: 0.5·|e − t|² per sample, scaled by `scale`.
/// `asked` lists the distinct ids of the batch and `rows` their embeddings in that
/// order; the gradients come back in the same order.
pub fn loss_and_grads(batch: &[u32], asked: &[u32], rows: &[f32], dim: usize, scale: f32) -> (f64, Vec<f32>) {
    let slot: HashMap<u32, usize> = asked.iter().enumerate().map(|(i, &id)| (id, i)).collect();
    let mut grads = vec![0.0f32; asked.len() * dim];
    let mut loss = 0.0f64;
    for &id in batch {
        let s = slot[&id];
        let e = &rows[s * dim..(s + 1) * dim];
        for (k, t) in target(id, dim).enumerate() {
            let d = e[k] - t;
            loss += 0.5 * f64::from(d * d * scale);
            grads[s * dim + k] += d * scale;
        }
    }
    (loss, grads)
}

/// The distinct ids of a batch grouped by the rank that owns them (sorted in each group).
pub fn outbox(batch: &[u32], n: usize) -> BTreeMap<usize, Vec<u32>> {
    let mut out: BTreeMap<usize, Vec<u32>> = BTreeMap::new();
    for &id in batch {
        out.entry(crate::shard::owner(id, n)).or_default().push(id);
    }
    for ids in out.values_mut() {
        ids.sort_unstable();
        ids.dedup();
    }
    out
}
