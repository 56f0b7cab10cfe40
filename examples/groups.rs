//! Subgroups, as the torch.distributed tutorial: the first and the second half of the
//! ranks each all_reduce their ranks (SUM) inside their own group, then one MAX
//! all_reduce over the world gives everyone both sums. A SUM there would be wrong: each
//! group's sum would be counted once per member.
//!
//! `cargo xtask run -n 4 --example groups`

use dist_runtime::prelude::*;

dist_runtime::group!(Half);

#[spmd(strict)]
fn main(world: Comm<World>) -> Result<(), String> {
    let (r, n) = (world.rank(), world.size());
    let err = |e: dist_runtime::Error| e.to_string();
    let first: Vec<usize> = (0..n.div_ceil(2)).collect();
    let second: Vec<usize> = (n.div_ceil(2)..n).collect();
    // Every rank takes part in creating both groups; members get Some.
    let a = world.subgroup::<Half>(&first).map_err(err)?;
    let b = if second.is_empty() { None } else { world.subgroup::<Half>(&second).map_err(err)? };
    let mut sums = [0u64, 0u64];
    if let Some(g) = &a {
        let mut x = [r as u64];
        g.all_reduce(&mut x, ReduceOp::Sum).map_err(err)?;
        sums[0] = x[0];
    }
    if let Some(g) = &b {
        let mut x = [r as u64];
        g.all_reduce(&mut x, ReduceOp::Sum).map_err(err)?;
        sums[1] = x[0];
    }
    let mut wrong = sums;
    world.all_reduce(&mut sums, ReduceOp::Max).map_err(err)?;
    world.all_reduce(&mut wrong, ReduceOp::Sum).map_err(err)?;
    let want = [first.iter().sum::<usize>() as u64, second.iter().sum::<usize>() as u64];
    if sums != want {
        return Err(format!("rank {r}: group sums {sums:?}, expected {want:?}"));
    }
    println!("rank {r} in group {}: sums of the two groups = {sums:?}", if r < first.len() { "A" } else { "B" });
    if r == 0 {
        println!(
            "(a SUM instead of MAX would give {wrong:?}: each group's sum counted {} and {} times)",
            first.len(),
            second.len()
        );
    }
    Ok(())
}
