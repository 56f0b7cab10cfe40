use dist_runtime::prelude::*;

#[spmd]
fn train<T: Element>(world: Comm<World>) {
    let _ = world;
}

fn main() {}
