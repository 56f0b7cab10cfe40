//! Communication helpers of the trainer, with their own entries and tests.

use dist_runtime::prelude::*;

pub mod ring;

dist_runtime::group!(pub Stage);

/// Shares the loss of the last rank with every rank (a broadcast from a non-zero root).
#[spmd]
pub fn share_loss(world: Comm<World>) -> dist_runtime::Result<()> {
    let last = world.size() - 1;
    let mut loss = [if world.rank() == last { 42.5f32 } else { 0.0 }];
    world.broadcast(&mut loss, last)?;
    assert_eq!(loss[0], 42.5);
    println!("share_loss: rank {} got {}", world.rank(), loss[0]);
    Ok(())
}

#[cfg(test)]
mod tests {
    use dist_runtime::prelude::*;

    dist_runtime::group!(Dp);
    dist_runtime::group!(Tp);

    /// Ties go to the lower rank: a (score, rank) pair per item.
    fn best(acc: &mut [f64], x: &[f64]) {
        for (a, b) in acc.chunks_exact_mut(2).zip(x.chunks_exact(2)) {
            if b[0] > a[0] {
                a.copy_from_slice(b);
            }
        }
    }

    /// The vocabulary a trainer reaches for, from a crate outside the workspace: a 3-D
    /// mesh, an uneven non-blocking reduce-scatter, an exclusive scan and a user reduction.
    #[dist_runtime::test(ranks = [4, 8])]
    fn mesh_async_scan_and_user_reduction(world: Comm<World>) {
        let (n, r) = (world.size(), world.rank());
        let (stages, dp, tp) = world.mesh::<(super::Stage, Dp, Tp)>([2, n / 4, 2]).unwrap();
        assert_eq!(tp.members(), [r / 2 * 2, r / 2 * 2 + 1]);
        assert_eq!(stages.members(), [r % (n / 2), r % (n / 2) + n / 2]);
        // 10 gradients sharded unevenly over the dp replicas of this stage and shard.
        let counts: Vec<usize> = (0..dp.size()).map(|j| 10 * (j + 1) / dp.size() - 10 * j / dp.size()).collect();
        let grads: Vec<f32> = (0..10).map(|i| i as f32).collect();
        let mut mine = vec![0.0f32; counts[dp.rank()]];
        dp.reduce_scatter_v_async(&grads, &mut mine, &counts, ReduceOp::Sum).unwrap().wait().unwrap();
        let first: usize = counts[..dp.rank()].iter().sum();
        let want: Vec<f32> = (first..first + mine.len()).map(|i| (i * dp.size()) as f32).collect();
        assert_eq!(mine, want);
        let mut offset = [r as u64 + 1];
        world.exscan(&mut offset, ReduceOp::Sum).unwrap();
        assert_eq!(offset, [(r * (r + 1) / 2) as u64]);
        let mut top = [(r % 3) as f64, r as f64];
        world.all_reduce(&mut top, ReduceOp::user_items("best", 2, best)).unwrap();
        assert_eq!(top, [2.0, 2.0]); // ranks 2, 5, … score 2; rank 2 is the lowest
    }

    #[dist_runtime::test(ranks = [2, 4])]
    fn share_loss_reaches_every_stage(world: Comm<World>) {
        let stages: Comm<super::Stage> = world.split(0, world.rank() as i64).unwrap();
        let mut loss = [world.rank() as f32 * 2.0];
        let root = stages.size() - 1;
        stages.broadcast(&mut loss, root).unwrap();
        assert_eq!(loss[0], (world.size() - 1) as f32 * 2.0);
    }
}
