// Communicators created in different orders: even ranks split by parity then make a
// subgroup of the first half; odd ranks the other way round. Creation is collective
// on the parent, so the two calls meet each other's counterpart.
use dist_runtime::prelude::*;

dist_runtime::group!(Half);
dist_runtime::group!(Parity);

#[spmd(sizes = 2..=4)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let (r, n) = (world.rank(), world.size());
    let first: Vec<usize> = (0..n / 2).collect();
    if r % 2 == 0 {
        let _p = world.split::<Parity>((r % 2) as u32, r as i64)?;
        let _h = world.subgroup::<Half>(&first)?;
    } else {
        let _h = world.subgroup::<Half>(&first)?;
        let _p = world.split::<Parity>((r % 2) as u32, r as i64)?;
    }
    Ok(())
}
