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

    #[dist_runtime::test(ranks = [2, 4])]
    fn share_loss_reaches_every_stage(world: Comm<World>) {
        let stages: Comm<super::Stage> = world.split(0, world.rank() as i64).unwrap();
        let mut loss = [world.rank() as f32 * 2.0];
        let root = stages.size() - 1;
        stages.broadcast(&mut loss, root).unwrap();
        assert_eq!(loss[0], (world.size() - 1) as f32 * 2.0);
    }
}
