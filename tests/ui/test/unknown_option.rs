use dist_runtime::prelude::*;

#[dist_runtime::test(ranks = 2, threads = 4)]
fn sums(world: Comm<World>) {
    let _ = world;
}

fn main() {}
