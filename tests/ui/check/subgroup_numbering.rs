// `subgroup` numbers its members by world rank, whatever the list's order; only
// `subgroup_ordered` keeps the order of the list. On the pair from `subgroup(&[1, 0])`
// world rank 1 is rank 1, so its `send(1, ..)` goes to itself and world rank 0 waits
// on itself: neither is ever matched (the second block, with the list's order, is
// right). The asserts read received data, which the check must not take for the
// buffer's initial value (it did, judged that rank 0 panics, and skipped the size).
use dist_runtime::prelude::*;

dist_runtime::group!(Half);
dist_runtime::group!(Tp);
const T: Tag<i64> = Tag::new(1);

#[spmd(strict)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    if world.size() < 2 {
        return Ok(());
    }
    let r = world.rank();
    let mut got = [0i64];
    if let Some(p) = world.subgroup::<Half>(&[1, 0])? {
        if r == 1 {
            p.send(1, T, &[10])?;
        } else {
            p.recv(0, T, &mut got)?;
            assert_eq!(got[0], 10);
        }
    }
    if let Some(p) = world.subgroup_ordered::<Tp>(&[1, 0])? {
        if r == 1 {
            p.send(1, T, &[11])?;
        } else {
            p.recv(0, T, &mut got)?;
            assert_eq!(got[0], 11);
        }
    }
    Ok(())
}
