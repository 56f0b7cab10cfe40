#[dist_runtime::test(ranks = 2)]
fn sums() {}

fn main() {}
