//! Results on rank 0: the full vector, the total mass, the top vertices; checked there
//! against the serial reference.

use dist_runtime::prelude::*;

use crate::config::{AppError, Config};
use crate::graph::Partition;
use crate::solver::serial_pagerank;

const TOP_IDS: Tag<u64> = Tag::new(1);
const TOP_SCORES: Tag<f64> = Tag::new(2);

/// This rank's best `k` vertices (global ids), best first.
fn local_top(pr: &[f64], first: usize, k: usize) -> (Vec<u64>, Vec<f64>) {
    let mut order: Vec<usize> = (0..pr.len()).collect();
    order.sort_by(|&a, &b| pr[b].total_cmp(&pr[a]).then(a.cmp(&b)));
    order.truncate(k);
    (order.iter().map(|&i| (first + i) as u64).collect(), order.iter().map(|&i| pr[i]).collect())
}

pub fn report(world: &Comm<World>, cfg: &Config, part: &Partition, pr: &[f64], iters: usize) -> Result<(), AppError> {
    let (rank, size) = (world.rank(), world.size());
    let counts = part.counts();
    let mut mass = [pr.iter().sum::<f64>()];
    let (ids, scores) = local_top(pr, part.range(rank).start, cfg.top);
    if rank != 0 {
        world.gather_v(pr, None, &counts, 0)?;
        world.reduce(&mut mass, ReduceOp::Sum, 0)?;
        world.send(0, TOP_IDS, &ids)?;
        world.send(0, TOP_SCORES, &scores)?;
        return Ok(());
    }
    let mut ranks = vec![0.0; cfg.vertices];
    world.gather_v(pr, Some(&mut ranks[..]), &counts, 0)?;
    world.reduce(&mut mass, ReduceOp::Sum, 0)?;
    let mut top: Vec<(u64, f64)> = ids.into_iter().zip(scores).collect();
    for src in 1..size {
        let expect = cfg.top.min(part.range(src).len());
        let (mut their_ids, mut their_scores) = (vec![0u64; expect], vec![0.0f64; expect]);
        world.recv(src, TOP_IDS, &mut their_ids)?;
        world.recv(src, TOP_SCORES, &mut their_scores)?;
        top.extend(their_ids.into_iter().zip(their_scores));
    }
    top.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    top.truncate(cfg.top);

    let (want, serial_iters) = serial_pagerank(cfg);
    let worst = ranks.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    if worst > 1e-9 {
        return Err(AppError::Mismatch(format!("max |diff| {worst:.3e} after {iters} iterations")));
    }
    if (mass[0] - 1.0).abs() > 1e-9 {
        return Err(AppError::Mismatch(format!("total rank {} is not 1", mass[0])));
    }
    let mut want_top = want.clone();
    want_top.sort_by(|a, b| b.total_cmp(a));
    if top.len() != cfg.top.min(cfg.vertices) || top.iter().zip(&want_top).any(|(t, w)| (t.1 - w).abs() > 1e-9) {
        return Err(AppError::Mismatch(format!("top-{} scores differ: {top:?}", cfg.top)));
    }
    let best: Vec<String> = top.iter().take(3).map(|(v, s)| format!("{v}:{s:.5}")).collect();
    println!(
        "pagerank OK: {} vertices on {size} ranks, {iters} iterations (serial {serial_iters}), mass {:.12}, max diff {worst:.2e}, top {}",
        cfg.vertices,
        mass[0],
        best.join(" ")
    );
    Ok(())
}
