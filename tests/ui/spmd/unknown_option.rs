use dist_runtime::prelude::*;

#[spmd(fast, ranks = 0)]
fn main(world: Comm<World>) {
    let _ = world;
}
