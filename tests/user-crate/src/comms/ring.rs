//! A token passed around a ring with `sendrecv`, in a module file of its own.

use dist_runtime::prelude::*;

const TOKEN: Tag<u64> = Tag::new(7);

/// Each rank sends its rank to the next and receives the previous one's.
#[spmd]
pub fn pass_token(world: Comm<World>) -> dist_runtime::Result<()> {
    let (r, n) = (world.rank(), world.size());
    let mut got = [u64::MAX];
    world.sendrecv((r + 1) % n, TOKEN, &[r as u64], (r + n - 1) % n, &mut got)?;
    assert_eq!(got[0], ((r + n - 1) % n) as u64);
    println!("pass_token: rank {r} got {}", got[0]);
    Ok(())
}

#[cfg(test)]
mod tests {
    use dist_runtime::prelude::*;

    #[dist_runtime::test(ranks = [1, 3])]
    fn token_goes_around(world: Comm<World>) {
        super::pass_token(world).unwrap();
    }
}
