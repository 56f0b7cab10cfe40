// Metrics kept in a HashMap and reduced one by one: a HashMap's order differs from
// process to process, so ranks reduce different metrics together (a BTreeMap is the fix).
use dist_runtime::prelude::*;
use std::collections::HashMap;

#[spmd(sizes = 2..=3)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let mut metrics: HashMap<&'static str, (f64, ReduceOp)> = HashMap::new();
    metrics.insert("loss", (0.5, ReduceOp::Sum));
    metrics.insert("max_grad", (2.0, ReduceOp::Max));
    for (_, (value, op)) in metrics.iter_mut() {
        let mut buf = [*value];
        world.all_reduce(&mut buf, *op)?;
        *value = buf[0];
    }
    Ok(())
}
