//! The gossip step: each rank averages its parameters with one neighbour chosen by a
//! schedule.

use crate::model::average_into;
use dist_runtime::prelude::*;
use std::str::FromStr;

const PARAMS: Tag<f64> = Tag::new(7);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schedule {
    /// Step t: partner rank ^ (1 << (t mod d)), d = ceil(log2 n); no partner past n.
    Hypercube,
    /// Step t: even steps take from the left and give to the right, odd steps the reverse.
    Ring,
}

impl FromStr for Schedule {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "hypercube" | "cube" => Ok(Schedule::Hypercube),
            "ring" => Ok(Schedule::Ring),
            _ => Err(format!("unknown schedule {s} (hypercube, ring)")),
        }
    }
}

/// Who a rank exchanges with at one step: send to `to`, receive from `from`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exchange {
    pub to: usize,
    pub from: usize,
}

/// The exchange of rank `r` of `n` at step `t`, or None when it sits this step out.
pub fn exchange_for(schedule: Schedule, r: usize, n: usize, t: usize) -> Option<Exchange> {
    if n == 1 {
        return None;
    }
    match schedule {
        Schedule::Hypercube => {
            let dims = usize::BITS - (n - 1).leading_zeros();
            let p = r ^ (1 << (t % dims as usize));
            (p < n).then_some(Exchange { to: p, from: p })
        }
        Schedule::Ring => {
            let (right, left) = ((r + 1) % n, (r + n - 1) % n);
            Some(if t % 2 == 0 { Exchange { to: right, from: left } } else { Exchange { to: left, from: right } })
        }
    }
}

pub struct Gossiper {
    comm: Comm<World>,
    schedule: Schedule,
    inbox: Vec<f64>,
    pub exchanges: usize,
}

impl Gossiper {
    pub fn new(comm: &Comm<World>, schedule: Schedule, dim: usize) -> Gossiper {
        Gossiper { comm: comm.clone(), schedule, inbox: vec![0.0; dim], exchanges: 0 }
    }

    /// Averages `w` with this step's neighbour.
    pub fn mix(&mut self, t: usize, w: &mut [f64]) -> dist_runtime::Result<()> {
        let (r, n) = (self.comm.rank(), self.comm.size());
        if let Some(ex) = exchange_for(self.schedule, r, n, t) {
            self.comm.sendrecv(ex.to, PARAMS, &*w, ex.from, &mut self.inbox)?;
            average_into(w, &self.inbox);
            self.exchanges += 1;
        }
        Ok(())
    }
}
