use dist_runtime::prelude::*;

#[dist_runtime::test(ranks = [2, 0])]
fn sums(world: Comm<World>) {
    let _ = world;
}

fn main() {}
