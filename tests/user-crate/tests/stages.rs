//! An integration test file of the user's crate: distributed tests in two modules.

use dist_runtime::prelude::*;

#[dist_runtime::test(ranks = [2, 3])]
fn gathers_in_rank_order(world: Comm<World>) {
    let mut all = vec![0u32; world.size()];
    world.all_gather(&[world.rank() as u32 * 10], &mut all).unwrap();
    assert_eq!(all, (0..world.size() as u32).map(|r| r * 10).collect::<Vec<_>>());
}

mod halo {
    use dist_runtime::prelude::*;

    #[dist_runtime::test(ranks = [2, 4])]
    fn exchanges_with_neighbours(world: Comm<World>) {
        const HALO: Tag<i32> = Tag::new(3);
        let (r, n) = (world.rank(), world.size());
        let mut left = [0i32];
        world.sendrecv((r + 1) % n, HALO, &[r as i32], (r + n - 1) % n, &mut left).unwrap();
        assert_eq!(left[0], ((r + n - 1) % n) as i32);
    }

    /// A library entry launched from a test with `dist_runtime::launch`.
    #[test]
    fn library_entry_runs_from_a_test() {
        dist_runtime::launch(3, trainer::train_entry).unwrap();
    }
}
