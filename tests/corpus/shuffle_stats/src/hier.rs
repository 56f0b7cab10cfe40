//! Two-level reductions: inside each node to its leader, among the leaders, then back
//! down inside each node.

use dist_runtime::prelude::*;

dist_runtime::group!(pub Node);
dist_runtime::group!(pub Leaders);

pub struct Hierarchy {
    pub node: Comm<Node>,
    pub leaders: Option<Comm<Leaders>>,
}

impl Hierarchy {
    /// Ranks [k·node_size, (k+1)·node_size) form node k; each node's first rank leads.
    pub fn new(world: &Comm<World>, node_size: usize) -> dist_runtime::Result<Hierarchy> {
        let rank = world.rank();
        let node = world.split::<Node>((rank / node_size) as u32, rank as i64)?;
        let heads: Vec<usize> = (0..world.size()).step_by(node_size).collect();
        let leaders = world.subgroup::<Leaders>(&heads)?;
        Ok(Hierarchy { node, leaders })
    }

    pub fn is_leader(&self) -> bool {
        self.node.rank() == 0
    }

    /// `op` over every rank of the world, computed in two levels; every rank gets it.
    pub fn all_reduce(&self, values: &mut [u64], op: ReduceOp) -> dist_runtime::Result<()> {
        self.node.reduce(values, op, 0)?;
        if let Some(leaders) = &self.leaders {
            leaders.all_reduce(values, op)?;
        }
        self.node.broadcast(values, 0)?;
        Ok(())
    }
}
