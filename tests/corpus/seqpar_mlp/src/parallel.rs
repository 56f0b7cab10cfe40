//! The communicators of a dp × tp mesh.

use dist_runtime::prelude::*;

dist_runtime::group!(pub Dp);
dist_runtime::group!(pub Tp);

/// Gradients by parameter name (the order every rank reduces them in).
pub type Grads = std::collections::BTreeMap<&'static str, Vec<f64>>;

pub struct ParallelState {
    pub world: Comm<World>,
    pub dp: Comm<Dp>,
    pub tp: Comm<Tp>,
}

impl ParallelState {
    pub fn new(world: Comm<World>, tp_degree: usize) -> dist_runtime::Result<ParallelState> {
        let dp_degree = world.size() / tp_degree;
        let (dp, tp) = world.mesh2::<Dp, Tp>(dp_degree, tp_degree)?;
        Ok(ParallelState { world, dp, tp })
    }

    /// Data parallel: averages every gradient over the replicas, in name order.
    pub fn all_reduce_grads(&self, grads: &mut Grads) -> dist_runtime::Result<()> {
        for g in grads.values_mut() {
            self.dp.all_reduce(g, ReduceOp::Avg)?;
        }
        Ok(())
    }

    pub fn describe(&self) -> String {
        format!("{} (dp) x {} (tp)", self.dp.size(), self.tp.size())
    }
}
