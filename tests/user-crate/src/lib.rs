//! A small trainer: the entry points live in several modules and files, as in a real
//! crate, and each is launched by name (`cargo spmd run --entry NAME`).

use dist_runtime::prelude::*;

pub mod bench;
pub mod comms;
pub mod parallel;

/// Every rank contributes its rank + 1; the sum is n(n+1)/2 on every rank.
#[spmd]
pub fn train_entry(world: Comm<World>) -> dist_runtime::Result<()> {
    let mut loss = [world.rank() as f64 + 1.0];
    world.all_reduce(&mut loss, ReduceOp::Sum)?;
    let n = world.size() as f64;
    assert_eq!(loss[0], n * (n + 1.0) / 2.0);
    println!("train_entry: loss sum {} on {} ranks", loss[0], world.size());
    Ok(())
}

/// The sum of 0..n, serially: the reference the distributed results are checked against.
pub fn serial_rank_sum(n: usize) -> u64 {
    (0..n as u64).sum()
}

#[cfg(test)]
mod tests {
    use dist_runtime::prelude::*;

    #[dist_runtime::test(ranks = [1, 2, 3])]
    fn lib_sums(world: Comm<World>) {
        let mut x = [world.rank() as u64];
        world.all_reduce(&mut x, ReduceOp::Sum).unwrap();
        assert_eq!(x[0], super::serial_rank_sum(world.size()));
    }
}
