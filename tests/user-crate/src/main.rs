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

#[cfg(test)]
mod tests {
    use dist_runtime::prelude::*;

    #[dist_runtime::test(ranks = 2)]
    fn main_module_test(world: Comm<World>) {
        world.barrier().unwrap();
        assert_eq!(world.size(), 2);
    }
}
