// A program that picks its mode from a flag, then refuses odd world sizes past one before its
// first op. At size 3 every run ends in its own error after a condition decided by pattern;
// the check must not take that check to pass (it would pair rank 2 with a rank 3 that does
// not exist at size 3): a size refused before any communication stays refused.
use dist_runtime::prelude::*;

const T: Tag<f64> = Tag::new(1);

enum Mode {
    Pairs,
    PairsThenBarrier { rounds: usize },
}

#[spmd(strict, sizes = 1..=4)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    let sync = std::env::args().any(|a| a == "--sync");
    let mode = if sync { Mode::PairsThenBarrier { rounds: 2 } } else { Mode::Pairs };
    if world.size() == 1 {
        return Ok(());
    }
    if world.size() % 2 != 0 {
        return Err(dist_runtime::Error::Env("this program needs an even number of ranks".into()));
    }
    let partner = world.rank() ^ 1;
    let mut x = [0.0];
    world.sendrecv(partner, T, &[1.0], partner, &mut x)?;
    if let Mode::PairsThenBarrier { rounds } = mode {
        for _ in 0..rounds {
            world.barrier()?;
        }
    }
    Ok(())
}
