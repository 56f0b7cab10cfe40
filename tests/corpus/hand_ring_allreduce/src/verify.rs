//! Test data, the serial sums and dist's own collectives as references.

use dist_runtime::prelude::*;

/// Rank `r`'s vector: small integers, so sums are exact in any order.
pub fn rank_data(r: usize, len: usize, seed: u64) -> Vec<f64> {
    (0..len).map(|i| ((r * 7919 + i * 31 + seed as usize * 101) % 1000) as f64 - 500.0).collect()
}

pub fn serial_sum(n: usize, len: usize, seed: u64) -> Vec<f64> {
    (0..n).map(|r| rank_data(r, len, seed)).fold(vec![0.0; len], |mut acc, v| {
        acc.iter_mut().zip(&v).for_each(|(a, x)| *a += x);
        acc
    })
}

pub fn library_all_reduce(world: &Comm<World>, data: &[f64]) -> dist_runtime::Result<Vec<f64>> {
    let mut out = data.to_vec();
    world.all_reduce(&mut out, ReduceOp::Sum)?;
    Ok(out)
}

pub fn library_broadcast(world: &Comm<World>, data: &[f64], root: usize) -> dist_runtime::Result<Vec<f64>> {
    let mut out = if world.rank() == root { data.to_vec() } else { vec![0.0; data.len()] };
    world.broadcast(&mut out, root)?;
    Ok(out)
}

/// The first index where `a` and `b` differ (or their lengths do).
pub fn first_mismatch(a: &[f64], b: &[f64]) -> Option<usize> {
    if a.len() != b.len() {
        return Some(a.len().min(b.len()));
    }
    a.iter().zip(b).position(|(x, y)| x != y)
}
