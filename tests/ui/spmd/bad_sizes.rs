use dist_runtime::prelude::*;

#[spmd(sizes = 8..=2)]
fn main(world: Comm<World>) {
    let _ = world;
}
