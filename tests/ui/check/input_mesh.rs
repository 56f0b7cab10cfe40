// A mesh shaped by a `--tp` flag is followed: the flag is the same on every rank, and
// the check tries it as 1, 2 and 3. A collective reached by one tp rank only is found.
use dist_runtime::prelude::*;

dist_runtime::group!(Dp);
dist_runtime::group!(Tp);

fn flag(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

#[spmd(sizes = 1..=4)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let tp = flag("--tp", 1);
    assert!(world.size() % tp == 0, "--tp must divide the world size");
    let (_dp, tpc) = world.mesh2::<Dp, Tp>(world.size() / tp, tp)?;
    let mut x = [1.0f32; 4];
    if tpc.rank() == 0 {
        tpc.all_reduce(&mut x, ReduceOp::Sum)?;
    }
    Ok(())
}
