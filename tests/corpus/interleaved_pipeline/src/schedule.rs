//! The interleaved 1F1B schedule (Megatron-LM's): rank r holds the virtual stages
//! (chunks) r, r + p, r + 2p, …; with one chunk it is the plain 1F1B schedule.

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Payload { Activation, Gradient }

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Forward { mb: usize, chunk: usize },
    Backward { mb: usize, chunk: usize },
    Send { what: Payload, mb: usize, chunk: usize, peer: usize },
    Recv { what: Payload, mb: usize, chunk: usize, peer: usize },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind { OneFOneB, Interleaved { chunks: usize } }

/// Where the stages sit: stage (layer) `s` is chunk `s / p` of rank `s % p`.
#[derive(Clone, Copy, Debug)]
pub struct Placement { pub ranks: usize, pub chunks: usize }

impl Placement {
    pub fn stages(&self) -> usize { self.ranks * self.chunks }
    pub fn stage(&self, rank: usize, chunk: usize) -> usize { chunk * self.ranks + rank }
    pub fn rank_of(&self, stage: usize) -> usize { stage % self.ranks }
    /// The rank holding the stage after / before any stage of `rank`.
    pub fn next_rank(&self, rank: usize) -> usize { (rank + 1) % self.ranks }
    pub fn prev_rank(&self, rank: usize) -> usize { (rank + self.ranks - 1) % self.ranks }
}

pub struct Schedule { pub kind: Kind, pub actions: Vec<Action> }

impl Schedule {
    pub fn sends(&self) -> usize {
        self.actions.iter().filter(|a| matches!(a, Action::Send { .. })).count()
    }
}

/// The compute order of rank `rank`: (is_forward, micro-batch, chunk).
fn compute_order(rank: usize, place: Placement, micro: usize) -> Vec<(bool, usize, usize)> {
    let (p, v) = (place.ranks, place.chunks);
    let total = micro * v;
    let group = p * v;
    let chunk_of = |k: usize, forward: bool| {
        let c = (k % group) / p;
        if forward { c } else { v - 1 - c }
    };
    let mb_of = |k: usize| (k / group) * p + k % p;
    let warmup = if v == 1 {
        (p - rank - 1).min(total)
    } else {
        ((p - rank - 1) * 2 + (v - 1) * p).min(total)
    };
    let mut order = Vec::with_capacity(2 * total);
    order.extend((0..warmup).map(|k| (true, mb_of(k), chunk_of(k, true))));
    for i in 0..total - warmup {
        let k = warmup + i;
        order.push((true, mb_of(k), chunk_of(k, true)));
        order.push((false, mb_of(i), chunk_of(i, false)));
    }
    order.extend((total - warmup..total).map(|k| (false, mb_of(k), chunk_of(k, false))));
    order
}

pub fn build(rank: usize, place: Placement, micro: usize) -> Result<Schedule, String> {
    let kind = if place.chunks == 1 { Kind::OneFOneB } else { Kind::Interleaved { chunks: place.chunks } };
    if let Kind::Interleaved { .. } = kind {
        if micro % place.ranks != 0 {
            return Err(format!("interleaving needs the micro-batches ({micro}) to be a multiple of the ranks ({})", place.ranks));
        }
    }
    let last = place.stages() - 1;
    let mut actions = Vec::new();
    for (forward, mb, chunk) in compute_order(rank, place, micro) {
        let stage = place.stage(rank, chunk);
        let (next, prev) = (place.next_rank(rank), place.prev_rank(rank));
        if forward {
            if stage > 0 {
                actions.push(Action::Recv { what: Payload::Activation, mb, chunk, peer: prev });
            }
            actions.push(Action::Forward { mb, chunk });
            if stage < last {
                actions.push(Action::Send { what: Payload::Activation, mb, chunk, peer: next });
            }
        } else {
            if stage < last {
                actions.push(Action::Recv { what: Payload::Gradient, mb, chunk, peer: next });
            }
            actions.push(Action::Backward { mb, chunk });
            if stage > 0 {
                actions.push(Action::Send { what: Payload::Gradient, mb, chunk, peer: prev });
            }
        }
    }
    Ok(Schedule { kind, actions })
}
