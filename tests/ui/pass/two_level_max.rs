// A maximum reduced in two levels (each team's reduce to its head, the heads'
// all-reduce, each team's broadcast from its head) is one value on every rank: a loop
// that stops on it stops on every rank at the same step. (The broadcast's root held the
// heads' result, so every member holds it after the call.)
#![deny(deprecated)]
use dist_runtime::prelude::*;
dist_runtime::group!(Team);
dist_runtime::group!(Heads);

#[spmd(sizes = 1..=8)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let r = world.rank();
    let team = world.split::<Team>((r / 2) as u32, r as i64)?;
    let heads: Vec<usize> = (0..world.size()).filter(|q| q % 2 == 0).collect();
    let leaders = world.subgroup::<Heads>(&heads)?;
    let mut it = 0;
    loop {
        let mut x = [1.0 / (it as f64 + 1.0) + r as f64 * 1e-3];
        team.reduce(&mut x, ReduceOp::Max, 0)?;
        if let Some(l) = &leaders {
            l.all_reduce(&mut x, ReduceOp::Max)?;
        }
        team.broadcast(&mut x, 0)?;
        it += 1;
        if x[0] < 0.1 {
            break;
        }
        world.barrier()?;
    }
    assert!(it > 0);
    Ok(())
}
