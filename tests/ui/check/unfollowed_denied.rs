// Without `strict`, what the check cannot follow is a warning at the construct (rustc's
// `deprecated` lint, the one stable Rust lets a macro raise), its note saying it is not a
// deprecation; `#![deny(deprecated)]` makes a crate refuse to build where the check is off.
#![deny(deprecated)]
use dist_runtime::prelude::*;

#[spmd(ranks = 2)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let step = async { world.barrier() };
    drop(step);
    Ok(())
}
