use dist_runtime::prelude::*;

#[spmd]
fn main(world: Comm<World>, steps: u32) {
    let _ = (world, steps);
}
