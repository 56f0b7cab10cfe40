// Gradients come back from a helper summarised past its quota (a long loop), keyed by
// name in a `BTreeMap` alias: the check keeps the map's keys from the helper's last
// expression, so the data-parallel loop over them is followed, and rank 0 dropping the
// bias gradient (one all_reduce fewer) is found.
use dist_runtime::prelude::*;

type Grads = std::collections::BTreeMap<&'static str, Vec<f64>>;

fn backward(n: usize, seed: u64) -> Grads {
    let mut s = seed;
    let mut w = vec![0.0; n];
    for _ in 0..100_000 {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1);
        w[(s % n as u64) as usize] += (s >> 33) as f64;
    }
    let b = w.iter().map(|x| x * 0.5).collect();
    Grads::from([("w", w), ("b", b)])
}

#[spmd(sizes = 2..=4)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let mut grads = backward(4, world.rank() as u64);
    if world.rank() == 0 {
        grads.remove("b");
    }
    for g in grads.values_mut() {
        world.all_reduce(g, ReduceOp::Sum)?;
    }
    Ok(())
}
