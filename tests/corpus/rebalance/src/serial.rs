//! The same balancing simulated in one process over all ranks' items.

use crate::items::{drift, generate, load, owner, summary, Item};
use crate::opts::Opts;

pub struct SerialRun {
    pub per_rank: Vec<Vec<Item>>,
    pub history: Vec<(u64, u64)>,
    pub tables: Vec<Vec<u64>>,
}

pub fn simulate(n: usize, o: &Opts) -> SerialRun {
    let mut per_rank: Vec<Vec<Item>> = (0..n).map(|r| generate(r, o.base, o.seed)).collect();
    let mut history = Vec::new();
    let mut tables = Vec::new();
    for round in 0..o.rounds {
        per_rank.iter_mut().for_each(|v| drift(v, round, o.seed));
        let loads: Vec<u64> = per_rank.iter().map(|v| load(v)).collect();
        let (total, max) = (loads.iter().sum::<u64>(), loads.iter().copied().max().unwrap_or(0));
        history.push((total, max));
        if max as f64 * n as f64 / total.max(1) as f64 <= o.target {
            break;
        }
        let mut next: Vec<Vec<Item>> = vec![Vec::new(); n];
        let mut start = 0;
        for it in per_rank.concat() {
            next[owner(o.policy, start, it.weight, total, n)].push(it);
            start += it.weight;
        }
        per_rank = next;
        tables.push(per_rank.iter().flat_map(|v| summary(v)).collect());
    }
    SerialRun { per_rank, history, tables }
}
