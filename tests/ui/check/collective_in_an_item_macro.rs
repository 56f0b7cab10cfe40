// An item-position macro writes each layer type's `sync`; one type's all-reduces the
// gradient, the other's the weights' shorter buffer: the lengths disagree across
// ranks that hold different layers, named inside the generated method.
use dist_runtime::prelude::*;

trait Sync {
    fn sync(&mut self, c: &Comm<World>) -> dist_runtime::Result<()>;
}

macro_rules! impl_sync {
    ($t:ident, $field:ident) => {
        impl Sync for $t {
            fn sync(&mut self, c: &Comm<World>) -> dist_runtime::Result<()> {
                c.all_reduce(&mut self.$field, ReduceOp::Sum)
            }
        }
    };
}

struct Dense {
    w: Vec<f64>,
}
impl_sync!(Dense, w);

#[spmd(sizes = 2..=2)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let len = if world.rank() == 0 { 4 } else { 3 };
    let mut d = Dense { w: vec![1.0; len] };
    d.sync(&world)?;
    Ok(())
}
