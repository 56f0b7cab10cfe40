// `None =>` before `Some(h) =>` on an `Option` field holding a communicator: `None` is the
// variant, not a new name (syn reads it as an identifier pattern), so the `Some` arm is
// followed and the barrier only rank 0 reaches in it is found.
use dist_runtime::prelude::*;

dist_runtime::group!(Node);

struct GradSync {
    world: Comm<World>,
    node: Option<Comm<Node>>,
}

impl GradSync {
    fn sum(&self, grads: &mut [f64]) -> dist_runtime::Result<()> {
        match &self.node {
            None => self.world.all_reduce(grads, ReduceOp::Sum),
            Some(node) => {
                if self.world.rank() == 0 {
                    self.world.barrier()?;
                }
                node.all_reduce(grads, ReduceOp::Sum)
            }
        }
    }
}

#[spmd(ranks = 2)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let node = Some(world.split::<Node>(0, world.rank() as i64)?);
    let sync = GradSync { world: world.clone(), node };
    let mut grads = [1.0; 4];
    sync.sum(&mut grads)
}
