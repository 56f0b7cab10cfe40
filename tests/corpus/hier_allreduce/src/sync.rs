//! Gradient synchronisation: flat all_reduce, or hierarchical (reduce inside a node,
//! all_reduce among node leaders, broadcast back inside the node).

use dist_runtime::prelude::*;

dist_runtime::group!(pub Node);
dist_runtime::group!(pub Leaders);

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SyncMode {
    Flat,
    Hierarchical { local_size: usize },
}

struct Hier {
    node: Comm<Node>,
    leaders: Comm<Leaders>,
    is_leader: bool,
    node_id: usize,
}

pub struct GradSync {
    world: Comm<World>,
    hier: Option<Hier>,
}

impl GradSync {
    pub fn new(world: &Comm<World>, mode: SyncMode) -> dist_runtime::Result<GradSync> {
        let hier = match mode {
            SyncMode::Flat => None,
            SyncMode::Hierarchical { local_size } => {
                let node_id = world.rank() / local_size;
                let node = world.split::<Node>(node_id as u32, world.rank() as i64)?;
                let is_leader = node.rank() == 0;
                let color = if is_leader { 0 } else { 1 };
                let leaders = world.split::<Leaders>(color, world.rank() as i64)?;
                Some(Hier { node, leaders, is_leader, node_id })
            }
        };
        Ok(GradSync { world: world.clone(), hier })
    }

    pub fn describe(&self) -> String {
        match &self.hier {
            None => format!("flat all_reduce over {} ranks", self.world.size()),
            Some(h) => format!(
                "hierarchical: node {} of size {}, {} leaders",
                h.node_id,
                h.node.size(),
                if h.is_leader { h.leaders.size() } else { self.world.size() / h.node.size() }
            ),
        }
    }

    /// Sums `grads` over every rank of the world, in place.
    pub fn sum(&self, grads: &mut [f64]) -> dist_runtime::Result<()> {
        match &self.hier {
            None => self.world.all_reduce(grads, ReduceOp::Sum),
            Some(h) => {
                h.node.reduce(grads, ReduceOp::Sum, 0)?;
                if h.is_leader {
                    h.leaders.all_reduce(grads, ReduceOp::Sum)?;
                }
                h.node.broadcast(grads, 0)
            }
        }
    }
}
