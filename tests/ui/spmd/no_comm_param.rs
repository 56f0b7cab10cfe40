use dist_runtime::prelude::*;

#[spmd]
fn main() {}
