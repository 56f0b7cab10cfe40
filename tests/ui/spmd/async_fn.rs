use dist_runtime::prelude::*;

#[spmd]
async fn train(world: Comm<World>) {
    let _ = world;
}

fn main() {}
