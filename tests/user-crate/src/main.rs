//! The trainer's binary: `cargo spmd run -n 8` runs `main` on 8 ranks;
//! `cargo spmd run -n 4 --entry share_loss` runs one of the library's entries instead.

use dist_runtime::prelude::*;

#[spmd]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let mut x = [world.rank() as u64];
    world.all_reduce(&mut x, ReduceOp::Sum)?;
    assert_eq!(x[0], trainer::serial_rank_sum(world.size()));
    if world.rank() == 0 {
        println!("trainer: sum of ranks {} on {} ranks", x[0], world.size());
    }
    // `-- --fail-on R`: rank R fails after the collective (to see the launcher name it).
    let args: Vec<String> = std::env::args().collect();
    if let Some(r) = args.iter().position(|a| a == "--fail-on").and_then(|i| args.get(i + 1)) {
        if r.parse::<usize>().ok() == Some(world.rank()) {
            return Err(dist_runtime::Error::Env(format!("rank {} was asked to fail", world.rank())));
        }
    }
    Ok(())
}

/// A pipeline-parallel training loop over the library's `ParallelState` and its helpers
/// in `parallel/pipeline.rs` and `parallel/grads.rs`, fully followed by the compile-time
/// check (`strict`): `cargo spmd run -n 4 --entry pipeline_train`.
#[spmd(strict)]
fn pipeline_train(world: Comm<World>) -> dist_runtime::Result<()> {
    use trainer::parallel::{grads, pipeline, ParallelState};
    const MICRO: usize = 4;
    // The step count comes from the command line (`-- --steps N`): the same on every
    // rank, so the compile-time check follows the loop (for 1, 2 and 3 steps).
    let args: Vec<String> = std::env::args().collect();
    let steps: usize = args
        .iter()
        .position(|a| a == "--steps")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let ps = ParallelState::new(&world)?;
    let mut buckets = vec![vec![0.0f32; 64]; 3];
    for _ in 0..steps {
        for m in 0..MICRO {
            let mut act = vec![m as f32; 16];
            pipeline::forward(&ps, &mut act)?;
            if ps.last_stage() {
                // Serial reference: stage k maps x to 2x + 1, once per stage.
                let want = (0..ps.pp.size()).fold(m as f32, |x, _| 2.0 * x + 1.0);
                assert!(act.iter().all(|&a| a == want), "micro-batch {m}: {act:?} != {want}");
            }
        }
        for (i, b) in buckets.iter_mut().enumerate() {
            b.fill((ps.dp.rank() + i) as f32);
        }
        grads::average(&ps, &mut buckets)?;
        let d = ps.dp.size() as f32;
        for (i, b) in buckets.iter().enumerate() {
            let want = (0..ps.dp.size()).map(|r| (r + i) as f32).sum::<f32>() / d;
            assert!(b.iter().all(|&x| x == want), "bucket {i}");
        }
    }
    if world.rank() == 0 {
        println!("pipeline_train: {steps} steps of {MICRO} micro-batches on {} stages", ps.pp.size());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use dist_runtime::prelude::*;

    #[dist_runtime::test(ranks = 2)]
    fn main_module_test(world: Comm<World>) {
        world.barrier().unwrap();
        assert_eq!(world.size(), 2);
    }
}
