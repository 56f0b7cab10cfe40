// Two modules each define a function `apply`: the serial reference's and the distributed
// operator's. A call of `apply` inside each module is that module's own function, so the
// distributed one is followed (and its extra send found) though the other comes first.
use dist_runtime::prelude::*;

#[path = "modules/serial_ref.rs"]
mod serial;

#[path = "modules/dist_op.rs"]
mod op;

#[spmd(sizes = 2..=2)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let want = serial::solve(4);
    let got = op::iterate(&world, &[1.0; 4])?;
    println!("{} {}", want.len(), got.len());
    Ok(())
}
