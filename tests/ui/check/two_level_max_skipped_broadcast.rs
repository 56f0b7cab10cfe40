// The two-level maximum without the team's broadcast: the heads hold the heads'
// result, the other members what their own reduce left, so a loop that stops on it may
// stop on one rank and go on to the barrier on another.
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
        it += 1;
        if x[0] < 0.1 {
            break;
        }
        world.barrier()?;
    }
    assert!(it > 0);
    Ok(())
}
