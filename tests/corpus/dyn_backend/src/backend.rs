//! The trainer never names dist: it talks to a `Reducer`. Here are the implementations:
//! over one dist communicator of any group (`DistReducer<G>`), node by node
//! (`Hierarchical`: a split into nodes plus a subgroup of node leaders), and a serial
//! one for the reference run.

use dist_runtime::prelude::*;
use std::fmt;

dist_runtime::group!(pub Node);
dist_runtime::group!(pub Leaders);

/// The tag of the ring checksum token.
pub const RING: Tag<u64> = Tag::new(11);
/// The tag of the per-rank shard reports sent to rank 0.
pub const REPORT: Tag<u64> = Tag::new(12);

/// A failed communication, with what the reducer was doing.
#[derive(Debug)]
pub struct CommError {
    pub what: &'static str,
    pub source: dist_runtime::Error,
}

impl fmt::Display for CommError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed: {}", self.what, self.source)
    }
}

impl std::error::Error for CommError {}

pub type CommResult<T> = Result<T, CommError>;

/// Attaches what we were doing to a dist error.
trait Context<T> {
    fn during(self, what: &'static str) -> CommResult<T>;
}

impl<T> Context<T> for dist_runtime::Result<T> {
    fn during(self, what: &'static str) -> CommResult<T> {
        self.map_err(|source| CommError { what, source })
    }
}

/// What the training code needs from a communication layer.
pub trait Reducer {
    fn rank(&self) -> usize;
    fn size(&self) -> usize;
    fn describe(&self) -> String;
    /// Element-wise sum over every rank, result everywhere.
    fn sum_in_place(&self, v: &mut [f64]) -> CommResult<()>;
    /// Element-wise maximum over every rank, result everywhere.
    fn max_in_place(&self, v: &mut [f64]) -> CommResult<()>;
    /// Copies `root`'s `v` to every rank.
    fn broadcast_from(&self, v: &mut [f64], root: usize) -> CommResult<()>;
    /// Sum of one counter over every rank.
    fn count(&self, local: u64) -> CommResult<u64>;
    /// Passes a token once around the ring of ranks, starting at rank 0, each rank
    /// folding its own value in (`fold_token`). Rank 0 gets the full fold back; the
    /// others return what they forwarded.
    fn ring_fold(&self, mine: u64) -> CommResult<u64>;
}

/// How each rank mixes its value into the ring token.
pub fn fold_token(acc: u64, mine: u64) -> u64 {
    acc.rotate_left(7) ^ mine.wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// One dist communicator of any group.
pub struct DistReducer<G: Group> {
    comm: Comm<G>,
    label: &'static str,
}

impl<G: Group> DistReducer<G> {
    pub fn new(comm: Comm<G>, label: &'static str) -> Self {
        DistReducer { comm, label }
    }

    /// Sum onto `root` only (others' `v` unchanged).
    fn reduce_to(&self, v: &mut [f64], op: ReduceOp, root: usize) -> CommResult<()> {
        self.comm.reduce(v, op, root).during("reduce to the node root")
    }
}

impl<G: Group> Reducer for DistReducer<G> {
    fn rank(&self) -> usize {
        self.comm.rank()
    }

    fn size(&self) -> usize {
        self.comm.size()
    }

    fn describe(&self) -> String {
        format!("{} ({} ranks)", self.label, self.comm.size())
    }

    fn sum_in_place(&self, v: &mut [f64]) -> CommResult<()> {
        self.comm.all_reduce(v, ReduceOp::Sum).during("sum")
    }

    fn max_in_place(&self, v: &mut [f64]) -> CommResult<()> {
        self.comm.all_reduce(v, ReduceOp::Max).during("max")
    }

    fn broadcast_from(&self, v: &mut [f64], root: usize) -> CommResult<()> {
        self.comm.broadcast(v, root).during("broadcast")
    }

    fn count(&self, local: u64) -> CommResult<u64> {
        let mut c = [local];
        self.comm.all_reduce(&mut c, ReduceOp::Sum).during("count")?;
        Ok(c[0])
    }

    fn ring_fold(&self, mine: u64) -> CommResult<u64> {
        let (r, n) = (self.comm.rank(), self.comm.size());
        if n == 1 {
            return Ok(fold_token(0, mine));
        }
        let right = (r + 1) % n;
        let left = (r + n - 1) % n;
        let mut got = [0u64];
        if r == 0 {
            // Rank 0 starts the token and receives it back at the end.
            self.comm.send(right, RING, &[fold_token(0, mine)]).during("ring send")?;
            self.comm.recv(left, RING, &mut got).during("ring recv")?;
            Ok(got[0])
        } else {
            self.comm.recv(left, RING, &mut got).during("ring recv")?;
            let token = fold_token(got[0], mine);
            self.comm.send(right, RING, &[token]).during("ring send")?;
            Ok(token)
        }
    }
}

/// Reduces inside each node first, then across the node leaders, then broadcasts the
/// result back inside each node: one message per node crosses the "network".
pub struct Hierarchical {
    world: DistReducer<World>,
    node: DistReducer<Node>,
    leaders: Option<DistReducer<Leaders>>,
}

impl Hierarchical {
    /// Every rank of `world` calls this (the split and the subgroup are collective).
    pub fn new(world: &Comm<World>, per_node: usize) -> CommResult<Self> {
        let r = world.rank();
        let node = world.split::<Node>((r / per_node) as u32, r as i64).during("split into nodes")?;
        let leader_ranks: Vec<usize> = (0..world.size()).step_by(per_node).collect();
        let leaders = world.subgroup::<Leaders>(&leader_ranks).during("leader subgroup")?;
        Ok(Hierarchical {
            world: DistReducer::new(world.clone(), "world"),
            node: DistReducer::new(node, "node"),
            leaders: leaders.map(|c| DistReducer::new(c, "leaders")),
        })
    }

    fn two_level(&self, v: &mut [f64], op: ReduceOp) -> CommResult<()> {
        self.node.reduce_to(v, op, 0)?;
        if let Some(leaders) = &self.leaders {
            match op {
                ReduceOp::Max => leaders.max_in_place(v)?,
                _ => leaders.sum_in_place(v)?,
            }
        }
        self.node.broadcast_from(v, 0)
    }
}

impl Reducer for Hierarchical {
    fn rank(&self) -> usize {
        self.world.rank()
    }

    fn size(&self) -> usize {
        self.world.size()
    }

    fn describe(&self) -> String {
        let leaders = self.leaders.as_ref().map_or("not a leader".to_string(), |l| l.describe());
        format!("hierarchical: {} inside, {}", self.node.describe(), leaders)
    }

    fn sum_in_place(&self, v: &mut [f64]) -> CommResult<()> {
        self.two_level(v, ReduceOp::Sum)
    }

    fn max_in_place(&self, v: &mut [f64]) -> CommResult<()> {
        self.two_level(v, ReduceOp::Max)
    }

    fn broadcast_from(&self, v: &mut [f64], root: usize) -> CommResult<()> {
        self.world.broadcast_from(v, root)
    }

    fn count(&self, local: u64) -> CommResult<u64> {
        self.world.count(local)
    }

    fn ring_fold(&self, mine: u64) -> CommResult<u64> {
        self.world.ring_fold(mine)
    }
}

/// One process holding everything: the serial reference.
pub struct Serial;

impl Reducer for Serial {
    fn rank(&self) -> usize {
        0
    }

    fn size(&self) -> usize {
        1
    }

    fn describe(&self) -> String {
        "serial".into()
    }

    fn sum_in_place(&self, _: &mut [f64]) -> CommResult<()> {
        Ok(())
    }

    fn max_in_place(&self, _: &mut [f64]) -> CommResult<()> {
        Ok(())
    }

    fn broadcast_from(&self, _: &mut [f64], _: usize) -> CommResult<()> {
        Ok(())
    }

    fn count(&self, local: u64) -> CommResult<u64> {
        Ok(local)
    }

    fn ring_fold(&self, mine: u64) -> CommResult<u64> {
        Ok(fold_token(0, mine))
    }
}
