//! The same rounds on the whole graph in one process, and the MIS properties.

use crate::priority::{beats, draw, Status};

pub struct SerialMis {
    pub in_set: Vec<u8>,
    pub rounds: usize,
}

pub fn luby(adj: &[Vec<usize>], seed: u64, max_rounds: usize) -> Option<SerialMis> {
    let n = adj.len();
    let mut status = vec![Status::Undecided; n];
    let mut rounds = 0;
    while status.contains(&Status::Undecided) {
        if rounds == max_rounds {
            return None;
        }
        let prio: Vec<u64> =
            (0..n).map(|v| if status[v] == Status::Undecided { draw(seed, rounds, v) } else { 0 }).collect();
        let joins: Vec<usize> = (0..n)
            .filter(|&v| status[v] == Status::Undecided && adj[v].iter().all(|&u| beats(prio[v], v, prio[u], u)))
            .collect();
        joins.iter().for_each(|&v| status[v] = Status::InSet);
        for v in 0..n {
            if status[v] == Status::Undecided && adj[v].iter().any(|&u| status[u] == Status::InSet) {
                status[v] = Status::Excluded;
            }
        }
        rounds += 1;
    }
    Some(SerialMis { in_set: status.iter().map(|&s| u8::from(s == Status::InSet)).collect(), rounds })
}

/// No two members adjacent.
pub fn independent(adj: &[Vec<usize>], in_set: &[u8]) -> Result<(), String> {
    match (0..adj.len()).find_map(|v| adj[v].iter().find(|&&u| in_set[v] == 1 && in_set[u] == 1).map(|&u| (v, u))) {
        Some((v, u)) => Err(format!("{v} and {u} are adjacent and both in the set")),
        None => Ok(()),
    }
}

/// Every non-member has a member neighbour.
pub fn maximal(adj: &[Vec<usize>], in_set: &[u8]) -> Result<(), String> {
    match (0..adj.len()).find(|&v| in_set[v] == 0 && !adj[v].iter().any(|&u| in_set[u] == 1)) {
        Some(v) => Err(format!("vertex {v} could join the set")),
        None => Ok(()),
    }
}
